import Testing
import VaultCore

@testable import HTTPServer

@Suite struct URLEncodedFormTests {
    @Test func parsesPairsPlusAndPercentEscapes() throws {
        let form = try URLEncodedForm.parse("data=a%2Bb&accessKeyRef=x+y&cardNumber=4970%20101&empty=&flag&=v")
        #expect(form["data"] == "a+b")
        #expect(form["accessKeyRef"] == "x y")
        #expect(form["cardNumber"] == "4970 101")
        #expect(form["empty"] == "")
        #expect(form["flag"] == "")
        #expect(form[""] == "v")
        #expect(form["missing"] == nil)
    }

    @Test func keepsRepeatedNamesInOrderAndDecodesUTF8() throws {
        let form = try URLEncodedForm.parse("a=1&a=2&name=Ren%C3%A9")
        #expect(form.values("a") == ["1", "2"])
        #expect(form["name"] == "René")
    }

    @Test func splitsAtTheFirstEqualsSignAndSkipsEmptyPairsInAnyCollection() throws {
        let text = "&&a=b=c&&=&x=%3D&"
        let expected = [("a", "b=c"), ("", ""), ("x", "=")]
        for form in [
            try URLEncodedForm.parse(text), try URLEncodedForm.parse(Array(text.utf8)),
            try URLEncodedForm.parse(Array(text.utf8)[...]),
            // No contiguous storage: the bytes are copied first.
            try URLEncodedForm.parse(Array(text.utf8.reversed()).reversed()),
        ] {
            #expect(form.pairs.map(\.name) == expected.map(\.0))
            #expect(form.pairs.map(\.value) == expected.map(\.1))
        }
        #expect(try URLEncodedForm.parse("").isEmpty)
        #expect(try URLEncodedForm.parse("é=%C3%A9+x")["é"] == "é x")
        // A raw byte that is not UTF-8 is refused as an escaped one is.
        #expect(throws: HTTPError.badRequest("")) { try URLEncodedForm.parse([0x61, 0x3D, 0xFF]) }
        #expect(throws: HTTPError.badRequest("")) { try URLEncodedForm.parse([0xC3, 0x3D, 0x61]) }
    }

    @Test(arguments: ["a=%", "a=%4", "a=%zz", "a=%FF"])
    func malformedFormsAre400(text: String) {
        #expect(throws: HTTPError.badRequest("")) { try URLEncodedForm.parse(text) }
    }

    @Test func formBodiesParseWhateverTheContentType() throws {
        let request = Request(
            method: .post,
            target: "/tokenize?mode=1",
            headers: ["Content-Type": "application/json"],
            body: Array("cardNumber=4970101122334455&cardCvx=123".utf8)
        )
        #expect(try request.formFields()["cardCvx"] == "123")
        #expect(try request.query()["mode"] == "1")
        #expect(!"\(try request.formFields())".contains("4970101122334455"))
    }
}

@Suite struct RedactionTests {
    static let pan = "4970101122334455"
    static let bearer = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu"

    static func sensitiveRequest() -> Request {
        Request(
            method: .post,
            target: "/v2.01/acme/cards/\(pan)?cardNumber=\(pan)&cardCvx=123",
            headers: ["Authorization": "Bearer \(bearer)", "Cookie": "s=\(bearer)", "X-Card": "4970 1011 2233 4455"],
            body: Array("cardNumber=\(pan)&cardCvx=987".utf8),
            requestID: "r-abcdefgh"
        )
    }

    @Test func printingARequestShowsNoCardDataOrCredentials() {
        let request = Self.sensitiveRequest()
        var dumped = ""
        dump(request, to: &dumped)
        for text in ["\(request)", "\(request.headers)", String(reflecting: request), dumped] {
            #expect(!text.contains(Self.pan))
            #expect(!text.contains("4970 1011 2233 4455"))
            #expect(!text.contains(Self.bearer))
            #expect(!text.contains("987"))
            #expect(!text.contains("cardCvx"))
        }
        #expect("\(request.headers)".contains("Authorization: [REDACTED]"))
        #expect("\(request)".hasPrefix("POST /v2.01/acme/cards/XXXXXXXXXXXXXXXX"))
    }

    /// Found by fuzz-request-headers: a card number is a valid header name, and names were printed unmasked.
    @Test func printingHeadersMasksCardNumbersInHeaderNamesToo() {
        let headers: HTTPHeaders = ["4970101122334455": "x", "X-4970-1011-2233-4455": "y"]
        var dumped = ""
        dump(headers, to: &dumped)
        for text in ["\(headers)", String(reflecting: headers), dumped] {
            #expect(!text.contains("4970101122334455"), "\(text)")
            #expect(!text.contains("4970-1011-2233-4455"), "\(text)")
        }
        #expect("\(headers)" == "[XXXXXXXXXXXXXXXX: x, X-XXXX-XXXX-XXXX-XXXX: y]")
        #expect(headers["4970101122334455"] == "x")
    }

    @Test func scrubberMasksDigitRunsOfTwelveOrMore() {
        #expect(LogScrubber.maskDigitRuns("id 12345678901 ok") == "id 12345678901 ok")
        #expect(LogScrubber.maskDigitRuns("pan 4970101122334455.") == "pan XXXXXXXXXXXXXXXX.")
        #expect(LogScrubber.maskDigitRuns("4970-1011-2233-4455") == "XXXX-XXXX-XXXX-XXXX")
        #expect(LogScrubber.maskDigitRuns("plain") == "plain")
    }

    @Test func requestIDsEchoSaneOnesOnly() {
        let ids = RequestIDs()
        #expect(ids.accept("client-req-001") == "client-req-001")
        #expect(ids.accept("order-12a-345b-678") == "order-12a-345b-678")
        let cardShaped = [
            Self.pan, "4970-1011-2233-4455", "4970.1073.6205.4174", "4970_1073_6205_4174", "4970.1073", "req-4970",
            "ab-12.34-cd", "12.3.4.5.6.7.8.9",
        ]
        for bad in [nil, "short", "has space in it", String(repeating: "a", count: 65), "x\"y<script>"] + cardShaped {
            let id = ids.accept(bad)
            #expect(id != bad)
            #expect(RequestIDs.isAcceptable(id))
        }
        let first = ids.next()
        let second = ids.next()
        #expect(first != second)
        // The server's own ids are letters and dashes only, at every counter width.
        for _ in 0..<5000 {
            let id = ids.next()
            #expect(RequestIDs.isAcceptable(id))
            #expect(!id.utf8.contains { $0 >= 0x30 && $0 <= 0x39 })
        }
    }
}
