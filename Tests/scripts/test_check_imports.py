"""Tests of scripts/check-imports, the module-map check `make lint` runs: fed fake package descriptions over
small fake source trees, and once against this repository with a table that forbids an import it has.

Run with `python3 -m unittest discover -s Tests/scripts` (`make test-scripts`, part of `make test`)."""

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check-imports"


def run_checker(*arguments, cwd=None):
    result = subprocess.run(
        [sys.executable, str(CHECKER), *arguments], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    return result.returncode, result.stdout


class FakePackage:
    """A source tree, its `swift package describe` JSON and an import table, in a temporary directory."""

    def __init__(self):
        self.directory = tempfile.TemporaryDirectory(prefix="check-imports-")
        self.root = pathlib.Path(self.directory.name)
        self.targets = []
        self.table = {}

    def target(self, name, files, dependencies=(), allowed=None, kind="SwiftTarget", type="library",
               base="Sources"):
        path = f"{base}/{name}"
        for file, text in files.items():
            (self.root / path / file).parent.mkdir(parents=True, exist_ok=True)
            (self.root / path / file).write_text(text)
        sources = [file for file in files if not file.startswith("include/")]
        self.targets.append({
            "name": name, "c99name": name, "module_type": kind, "path": path, "sources": sources,
            "target_dependencies": list(dependencies), "type": type, "product_memberships": [],
        })
        self.table[name] = list(dependencies if allowed is None else allowed)

    def system_library(self, name):
        self.targets.append({
            "name": name, "c99name": name, "module_type": "SystemLibraryTarget", "path": f"Sources/{name}",
            "sources": [], "type": "system-target", "product_memberships": [],
        })
        self.table[name] = []

    def check(self, max_share="1.0"):
        description = self.root / "description.json"
        description.write_text(json.dumps({"name": "Fake", "path": str(self.root), "targets": self.targets}))
        rows = "\n".join(f"| `{name}` | {', '.join(f'`{m}`' for m in allowed) or '—'} |"
                         for name, allowed in self.table.items())
        table = self.root / "architecture.md"
        table.write_text(
            "# map\n\n<!-- import-table:begin -->\n| Module | May import |\n| --- | --- |\n" + rows
            + "\n<!-- import-table:end -->\n")
        return run_checker("--description", str(description), "--table", str(table), "--root", str(self.root),
                           "--max-share", max_share)

    def close(self):
        self.directory.cleanup()


class CheckImportsTests(unittest.TestCase):
    def setUp(self):
        self.package = FakePackage()
        self.package.target("Core", {"Core.swift": "import Foundation\npublic struct Clock {}\n"})
        self.package.target("Domain", {"Domain.swift": "public import Core\n\npublic struct Card {}\n"}, ["Core"])

    def tearDown(self):
        self.package.close()

    def test_a_map_that_agrees_passes(self):
        status, output = self.package.check()
        self.assertEqual(status, 0, output)
        self.assertIn("agree", output)

    def test_a_forbidden_import_fails(self):
        # The domain module reaches the HTTP module: declared, but the table does not allow it.
        self.package.target("HTTP", {"Server.swift": "import Core\n"}, ["Core"])
        self.package.targets[1]["target_dependencies"].append("HTTP")
        (self.package.root / "Sources/Domain/Wire.swift").write_text("import HTTP\n")
        self.package.targets[1]["sources"].append("Wire.swift")
        status, output = self.package.check()
        self.assertEqual(status, 1)
        self.assertIn("Sources/Domain/Wire.swift:1: Domain may not import HTTP", output)

    def test_an_undeclared_import_fails_even_when_the_table_allows_it(self):
        self.package.table["Domain"].append("Extra")
        self.package.target("Extra", {"Extra.swift": "import Foundation\n"})
        (self.package.root / "Sources/Domain/More.swift").write_text("@testable import Extra\n")
        self.package.targets[1]["sources"].append("More.swift")
        status, output = self.package.check()
        self.assertEqual(status, 1)
        self.assertIn("Domain imports Extra but does not declare it in Package.swift", output)

    def test_a_declared_dependency_nothing_imports_fails(self):
        self.package.target("Unused", {"Unused.swift": "import Core\n"}, ["Core"])
        self.package.targets[-1]["target_dependencies"].append("Domain")
        self.package.table["Unused"].append("Domain")
        status, output = self.package.check()
        self.assertEqual(status, 1)
        self.assertIn("Unused declares Domain but none of its files imports it", output)

    def test_a_target_missing_from_the_table_fails(self):
        self.package.target("Stray", {"Stray.swift": "import Foundation\n"})
        del self.package.table["Stray"]
        status, output = self.package.check()
        self.assertEqual(status, 1)
        self.assertIn("Stray: not in the import table", output)

    def test_a_c_file_including_openssl_counts_as_importing_it(self):
        self.package.system_library("COpenSSL")
        self.package.target(
            "CShim", {"shim.c": "#include <openssl/evp.h>\n", "include/shim.h": "int f(void);\n"},
            kind="ClangTarget")
        status, output = self.package.check()
        self.assertEqual(status, 1)
        self.assertIn("CShim imports COpenSSL but does not declare it", output)
        self.assertIn("CShim may not import COpenSSL", output)

    def test_imports_in_comments_do_not_count(self):
        (self.package.root / "Sources/Core/Notes.swift").write_text(
            "/*\nimport Domain\n*/\n// import Domain\nlet x = 1\n")
        self.package.targets[0]["sources"].append("Notes.swift")
        status, output = self.package.check()
        self.assertEqual(status, 0, output)

    def test_a_library_over_its_share_of_the_code_fails(self):
        self.package.target("Big", {"Big.swift": "import Foundation\n" + "let x = 1\n" * 200})
        status, output = self.package.check(max_share="0.5")
        self.assertEqual(status, 1)
        self.assertIn("Big: ", output)
        self.assertIn("over 50%", output)


class RepositoryTests(unittest.TestCase):
    """The real package against its real table passes; the same package against a table that forbids an import
    it has (MangopayAPI → HTTPServer) fails, naming the file."""

    def test_the_repository_agrees_with_its_table(self):
        status, output = run_checker(cwd=ROOT)
        self.assertEqual(status, 0, output)

    def test_the_repository_fails_against_a_table_that_forbids_one_of_its_imports(self):
        text = (ROOT / "docs" / "architecture.md").read_text()
        # The MangopayAPI row as it stands, whatever else it allows; the copy drops `HTTPServer` from it.
        table_text = text[text.index("<!-- import-table:begin -->") : text.index("<!-- import-table:end -->")]
        match = re.search(r"^\| `MangopayAPI` \| (.*) \|$", table_text, re.MULTILINE)
        self.assertIsNotNone(match, "the table has a MangopayAPI row")
        row = match.group(0)
        allowed = [name.strip() for name in match.group(1).split(",")]
        self.assertIn("`HTTPServer`", allowed)
        narrowed = "| `MangopayAPI` | " + ", ".join(name for name in allowed if name != "`HTTPServer`") + " |"
        with tempfile.TemporaryDirectory() as directory:
            table = pathlib.Path(directory) / "architecture.md"
            table.write_text(text.replace(row, narrowed))
            status, output = run_checker("--table", str(table), cwd=ROOT)
        self.assertEqual(status, 1)
        self.assertRegex(output, r"Sources/MangopayAPI/\w+\.swift:\d+: MangopayAPI may not import HTTPServer")


if __name__ == "__main__":
    unittest.main()
