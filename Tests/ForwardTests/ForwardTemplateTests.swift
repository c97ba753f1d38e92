import OutboundHTTP
import Testing

@testable import Forward

@Suite struct ForwardTemplateTests {
    private func rendered(
        _ text: String, escaping: TemplateEscaping = .raw, values: [CardPlaceholder: String]
    ) throws -> String {
        let template = try ForwardTemplate(parsing: text)
        let output = WipedBuffer()
        template.render(into: output, escaping: escaping) { placeholder in
            WipedBuffer(copying: Array((values[placeholder] ?? "?").utf8))
        }
        return output.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test func findsEveryFieldInOrder() throws {
        let template = try ForwardTemplate(
            parsing:
                #"{"pan":"{{card.card_a.number}}","exp":"{{card.card_a.expiry}}","m":"{{card.card_a.expiry_month}}","#
                + #""y":"{{card.card_a.expiry_year}}","cvc":"{{card.card_b.cvc}}","name":"{{card.card_b.holder}}"}"#)
        #expect(
            template.placeholders.map { "\($0.cardId).\($0.field.rawValue)" } == [
                "card_a.number", "card_a.expiry", "card_a.expiry_month", "card_a.expiry_year", "card_b.cvc",
                "card_b.holder",
            ])
    }

    @Test func substitutesValuesAndKeepsLiterals() throws {
        let values = [
            CardPlaceholder(cardId: "c1", field: .number): "4970107111111119",
            CardPlaceholder(cardId: "c1", field: .expiry): "1229",
        ]
        #expect(
            try rendered("n={{card.c1.number}}&e={{ card.c1.expiry }}!", values: values)
                == "n=4970107111111119&e=1229!")
    }

    @Test func otherDoubleBracesStayLiteral() throws {
        let template = try ForwardTemplate(parsing: "{{user.name}} and {{ notacard }} and {{")
        #expect(template.placeholders.isEmpty)
        #expect(try rendered("{{user.name}} {{", values: [:]) == "{{user.name}} {{")
    }

    @Test(arguments: [
        "{{card.c1.number}", "{{card.c1}}", "{{card..number}}", "{{card.c1.number", "{{card.c 1.number}}",
        "{{card.c1.pan}}", "{{card.c1.NUMBER}}",
    ])
    func refusesMalformedPlaceholders(_ text: String) {
        #expect(throws: ForwardTemplate.Problem.self) { try ForwardTemplate(parsing: text) }
    }

    @Test func unknownFieldProblemNamesTheFieldsAllowed() {
        do {
            _ = try ForwardTemplate(parsing: "{{card.c1.pan}}")
            Issue.record("parsed")
        } catch {
            #expect(error.reason.contains("'pan'"))
            #expect(error.reason.contains("expiry_month"))
        }
    }

    @Test func escapesForJSONAndForms() throws {
        let holder = [CardPlaceholder(cardId: "c1", field: .holder): "Zoë \"Z\" O'Neil\n&x=1"]
        #expect(
            try rendered(#"{"h":"{{card.c1.holder}}"}"#, escaping: .json, values: holder)
                == #"{"h":"Zoë \"Z\" O'Neil\n&x=1"}"#)
        #expect(
            try rendered("h={{card.c1.holder}}", escaping: .form, values: holder)
                == "h=Zo%C3%AB%20%22Z%22%20O%27Neil%0A%26x%3D1")
    }

    @Test func escapingFollowsTheContentType() {
        #expect(ForwardTemplate.escaping(forContentType: "application/json; charset=utf-8") == .json)
        #expect(ForwardTemplate.escaping(forContentType: "application/vnd.psp+json") == .json)
        #expect(ForwardTemplate.escaping(forContentType: "application/x-www-form-urlencoded") == .form)
        #expect(ForwardTemplate.escaping(forContentType: "text/plain") == .raw)
        #expect(ForwardTemplate.escaping(forContentType: nil) == .raw)
    }
}
