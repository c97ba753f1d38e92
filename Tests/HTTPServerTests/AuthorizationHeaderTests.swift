import Testing

@testable import HTTPServer

/// `Authorization: <scheme> <credentials>`: the scheme compared without case, the credentials without the spaces
/// and tabs around them.
@Suite struct AuthorizationHeaderTests {
    @Test(arguments: [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER\tabc", "abc"),
        ("Bearer    abc \t ", "abc"),
        ("Bearer a b", "a b"),
        ("Bearer é", "é"),
    ])
    func credentialsOfTheScheme(value: String, expected: String) {
        #expect(AuthorizationHeader.credentials(value, scheme: "Bearer") == expected)
    }

    @Test(arguments: [
        "", "Bearer", "Bearer ", "Bearer \t ", "Bearerabc", "Basic abc", "Bearer_abc", "Bèarer abc", " Bearer abc",
    ])
    func noCredentialsOtherwise(value: String) {
        #expect(AuthorizationHeader.credentials(value, scheme: "Bearer") == nil)
    }

    @Test func theSchemeIsTheCallersChoice() {
        #expect(AuthorizationHeader.credentials("basic ZGV2OmtleQ==", scheme: "Basic") == "ZGV2OmtleQ==")
        #expect(AuthorizationHeader.credentials("Bearer ZGV2OmtleQ==", scheme: "Basic") == nil)
    }
}
