import Testing
@testable import HTTPServer

@Test func moduleIsNamed() {
    #expect(HTTPServerModule.name == "HTTPServer")
}
