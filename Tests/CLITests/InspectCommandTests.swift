import CardVaultTesting
import Foundation
import Testing

@Suite struct InspectCommandTests {
    /// Luhn-valid numbers of several brands, plus numbers that fail one check each.
    static let numbers = [
        "4970107111111119", "5555555555554444", "2223003122003222", "378282246310005", "6011111111111117",
        "30569309025904", "3530111333300000", "6200000000000005", "5033951000000004", "2200000000000004",
        "6362970000457013", "6062826786276634", "6370950000000005", "9792030000000000", "5061000000000005",
        "6521500000000006", "5895626746595650", "6799990100000000019", "630467127688",
        "4970107111111118", "4222222222222", "7000000000000005", "49701071111111191119",
    ]

    /// Parses each output line as a JSON object.
    func objects(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line in
            let value = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try #require(value as? [String: Any])
        }
    }

    @Test func writesTheIssuesFormatExactly() throws {
        let result = try CLIProcess.run(["inspect"], stdin: "4970107111111119\n")
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(
            result.stdout == """
                {"brand": "visa", "candidates": ["visa"], "luhn": true, "lengthValid": true, "valid": true, \
                "alias": "497010XXXXXX1119", "securityCode": {"name": "CVV", "size": 3}}

                """)
    }

    @Test func oneObjectPerLineAndKeepsGoingAfterBadLines() throws {
        let input = [
            "3759 891111 11119", "4970-1071-1111-1118", "4970x07111111119", "", "35", "7000000000000005",
            "5033951000000004\r", String(repeating: "4", count: 5_000), "4970107111111119",
        ].joined(separator: "\n")
        let result = try CLIProcess.run(["inspect"], stdin: input)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let lines = try objects(result.stdout + (result.stdout.hasSuffix("\n") ? "" : "\n"))
        try #require(lines.count == 9)

        #expect(lines[0]["brand"] as? String == "amex")
        #expect(lines[0]["valid"] as? Bool == true)
        #expect(lines[0]["alias"] as? String == "375989XXXXX1119")
        #expect((lines[0]["securityCode"] as? [String: Any])?["name"] as? String == "CID")
        #expect((lines[0]["securityCode"] as? [String: Any])?["size"] as? Int == 4)
        #expect(lines[0]["error"] == nil)

        #expect(lines[1]["valid"] as? Bool == false)
        #expect(lines[1]["luhn"] as? Bool == false)
        #expect(lines[1]["lengthValid"] as? Bool == true)
        #expect(lines[1]["error"] as? String == "luhnFailed")
        #expect(lines[1]["brand"] as? String == "visa")

        #expect(lines[2]["error"] as? String == "invalidCharacter")
        #expect(lines[2]["brand"] is NSNull)
        #expect(lines[2]["alias"] is NSNull)
        #expect(lines[2]["securityCode"] is NSNull)

        #expect(lines[3]["error"] as? String == "invalidLength")
        #expect((lines[3]["candidates"] as? [String])?.count == 16)

        #expect(lines[4]["candidates"] as? [String] == ["jcb"])
        #expect(lines[4]["brand"] is NSNull)  // 3500–3527 belong to no brand yet
        #expect(lines[4]["alias"] is NSNull)

        #expect(lines[5]["error"] as? String == "unknownBrand")
        #expect(lines[5]["luhn"] as? Bool == true)

        #expect(lines[6]["brand"] as? String == "maestro")
        #expect(lines[6]["valid"] as? Bool == true)

        #expect(lines[7]["error"] as? String == "invalidLength")
        #expect(lines[7]["alias"] is NSNull)

        #expect(lines[8]["alias"] as? String == "497010XXXXXX1119")
    }

    @Test func partialInputListsCandidates() throws {
        let result = try CLIProcess.run(["inspect"], stdin: "2\n50\n4111\n")
        let lines = try objects(result.stdout)
        try #require(lines.count == 3)
        #expect(lines[0]["candidates"] as? [String] == ["mastercard", "jcb", "mir"])
        #expect(lines[1]["candidates"] as? [String] == ["maestro", "elo", "verve", "rupay"])
        #expect(lines[2]["candidates"] as? [String] == ["visa"])
        #expect(lines[2]["brand"] as? String == "visa")
        #expect(lines.allSatisfy { $0["valid"] as? Bool == false && $0["alias"] is NSNull })
    }

    @Test func neverPrintsAFullNumber() throws {
        let spaced = Self.numbers.map { number in
            let characters = Array(number)
            return stride(from: 0, to: characters.count, by: 4).map { offset in
                String(characters[offset..<min(offset + 4, characters.count)])
            }.joined(separator: " ")
        }
        let result = try CLIProcess.run(["inspect"], stdin: (Self.numbers + spaced).joined(separator: "\n") + "\n")
        #expect(result.status == 0)
        let lines = try objects(result.stdout)
        #expect(lines.count == Self.numbers.count * 2)
        for number in Self.numbers {
            #expect(!result.stdout.contains(number))
            #expect(!result.stderr.contains(number))
            // Nothing longer than the six-digit BIN runs together in the output.
            #expect(!result.stdout.contains(String(number.prefix(7))))
        }
        let valid = lines.filter { $0["valid"] as? Bool == true }
        #expect(valid.count == (Self.numbers.count - 4) * 2)
    }

    @Test func refusesNumbersAsArgumentsWithoutEchoingThem() throws {
        let result = try CLIProcess.run(["inspect", "4970107111111119"])
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(!result.stderr.contains("4970107111111119"))
        #expect(!result.stderr.contains("497010"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func emptyInputGivesNoOutput() throws {
        let result = try CLIProcess.run(["inspect"], stdin: "")
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.isEmpty)
    }

    @Test func unreadableInputExitsNonZero() throws {
        let process = Process()
        process.executableURL = CLIProcess.binary
        process.arguments = ["inspect"]
        // A directory opens for reading, but read(2) on it fails with EISDIR.
        let directory = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/"))
        process.standardInput = directory
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 74)
        #expect(outData.isEmpty)
        #expect(String(decoding: errData, as: UTF8.self) == "cardvault inspect: cannot read standard input\n")
    }

    @Test func helpDescribesStandardInput() throws {
        let result = try CLIProcess.run(["inspect", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("usage: cardvault inspect"))
        #expect(result.stdout.contains("standard input"))
        let top = try CLIProcess.run(["--help"])
        #expect(top.stdout.contains("inspect"))
    }
}
