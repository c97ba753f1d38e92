import Testing
import VaultStore

/// The one table of collection names: no two kinds of record share a name.
@Suite struct CollectionsTests {
    @Test func everyCollectionNameIsUniqueAndWellFormed() {
        #expect(Set(Collections.all).count == Collections.all.count)
        #expect(Collections.all.count >= 31)
        for name in Collections.all {
            #expect(!name.isEmpty && name.allSatisfy { $0.isLowercase || $0 == "-" }, "\(name)")
        }
    }
}
