"""Shared helpers of the real-browser tests (headless Chromium driven by Selenium): the browser, a merchant site
that receives callbacks and return URLs, layout measurements and axe-core (vendored by the axe-selenium-python
test dependency, injected through WebDriver so the pages' CSP does not apply to it)."""
import http.server
import importlib.util
import os
import pathlib
import shutil
import threading

from selenium import webdriver
from selenium.webdriver.common.by import By

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844), "small": (320, 640)}


def chrome(width=1280, height=800, javascript=True, language="en-US"):
    """Headless Chromium whose *viewport* (not window) is width x height."""
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=%d,%d" % (width, height), "--lang=" + language, "--hide-scrollbars"):
        options.add_argument(argument)
    if shutil.which("chromium"):
        options.binary_location = shutil.which("chromium")
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    set_viewport(driver, width, height)
    return driver


def set_viewport(driver, width, height):
    """Sizes the window so that the layout viewport is exactly width x height (CSS pixels)."""
    driver.set_window_size(width, height)
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    if inner and (inner[0] != width or inner[1] != height):
        driver.set_window_size(width + (width - inner[0]), height + (height - inner[1]))


def layout(driver):
    """What the viewport shows: its size, the document's scroll width and the Pay button's box."""
    return driver.execute_script("""
        var pay = document.querySelector('button.pay, .actions button.primary');
        var box = pay ? pay.getBoundingClientRect() : null;
        return {width: window.innerWidth, height: window.innerHeight,
                scrollWidth: document.documentElement.scrollWidth,
                pay: box ? {top: box.top, bottom: box.bottom, left: box.left, right: box.right} : null};
    """)


def assert_fits(driver, what, pay_in_view=True):
    """No horizontal scroll; with `pay_in_view`, the Pay button entirely inside the viewport without scrolling."""
    driver.execute_script("window.scrollTo(0, 0)")
    box = layout(driver)
    assert box["scrollWidth"] <= box["width"], "%s scrolls sideways: %s" % (what, box)
    if pay_in_view:
        assert box["pay"], "%s has no pay button" % what
        assert box["pay"]["bottom"] <= box["height"] and box["pay"]["right"] <= box["width"], \
            "%s: pay button not in view: %s" % (what, box)
    return box


def axe_script():
    """axe-core's axe.min.js as the axe-playwright-python test dependency ships it (its module is not imported:
    it would need Playwright)."""
    spec = importlib.util.find_spec("axe_playwright_python")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("axe-core missing: pip install --no-deps axe-playwright-python==0.1.8 (make test-sdk does)")
    return (pathlib.Path(list(spec.submodule_search_locations)[0]) / "axe.min.js").read_text(encoding="utf-8")


def axe_violations(driver, impacts=("serious", "critical")):
    """axe-core's violations of the given impacts on the current page (WCAG 2.x A and AA rules and best
    practices, as axe runs by default)."""
    driver.execute_script(axe_script())
    driver.set_script_timeout(60)
    results = driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "axe.run(document).then(function (r) { done(r); }, function (e) { done({error: String(e)}); });")
    assert "error" not in results, results
    return [violation for violation in results["violations"] if violation.get("impact") in impacts]


def describe(violations):
    return "; ".join("%s (%s): %s" % (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
                     for v in violations)


def screenshot(driver, name, full_page=False):
    """Writes docs/screenshots/<name>.png when CARDVAULT_SCREENSHOTS=1 (the docs' images come from test runs)."""
    if not os.environ.get("CARDVAULT_SCREENSHOTS"):
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    if full_page:
        width = driver.execute_script("return window.innerWidth")
        total = driver.execute_script("return document.documentElement.scrollHeight")
        set_viewport(driver, width, total)
    assert driver.save_screenshot(str(SCREENSHOTS / (name + ".png")))


class Merchant(http.server.ThreadingHTTPServer):
    """The merchant's site, on an origin of its own: records every request path and answers with a small page (or
    `page`, the shop's own HTML)."""

    def __init__(self, page=None):
        self.callbacks = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.callbacks.append(self.path)
                body = page.encode() if page else \
                    b"<!DOCTYPE html><html lang='en'><title>Merchant</title><h1>Back at the merchant</h1></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.base = "http://127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


def keyboard_type(driver, text):
    """Types into whatever has the focus (no clicks)."""
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(driver).send_keys(text).perform()


def tab_to(driver, element_id, limit=40):
    """Presses Tab until the element with `element_id` has the focus; fails after `limit` presses."""
    from selenium.webdriver.common.keys import Keys
    for _ in range(limit):
        if driver.execute_script("return document.activeElement && document.activeElement.id") == element_id:
            return
        keyboard_type(driver, Keys.TAB)
    raise AssertionError("Tab never reached #" + element_id)


def focused(driver):
    return driver.switch_to.active_element


__all__ = ["By", "chrome", "set_viewport", "layout", "assert_fits", "axe_violations", "describe", "screenshot",
           "Merchant", "keyboard_type", "tab_to", "focused", "VIEWPORTS", "ROOT"]
