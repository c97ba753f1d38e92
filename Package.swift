import Foundation
// swift-tools-version:6.0
import PackageDescription

/// One settings block for every Swift target: Swift 6 language mode (the tools version's default),
/// strict concurrency, and the upcoming features the codebase already follows.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    // `import X` is internal: a module's public API names only what it imports with `public import`, and a
    // target sees only the modules it declares (scripts/check-imports keeps that list and the sources equal).
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// A Swift library target in Sources/<name>, with the package's settings.
func library(_ name: String, _ dependencies: [Target.Dependency] = [], resources: [Resource]? = nil) -> Target {
    .target(name: name, dependencies: dependencies, resources: resources, swiftSettings: swiftSettings)
}

/// A Swift test target in Tests/<name>, with the package's settings.
func tests(_ name: String, _ dependencies: [Target.Dependency], resources: [Resource]? = nil) -> Target {
    .testTarget(name: name, dependencies: dependencies, resources: resources, swiftSettings: swiftSettings)
}

// The module map (what each target holds and which modules it may import) is docs/architecture.md; every
// dependency below is a module the target's sources import, and `make lint` checks both against that table.
let package = Package(
    name: "CardVault",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "cardvault", targets: ["cardvault"]),
        .executable(name: "cardvault-bench", targets: ["cardvault-bench"]),
    ],
    targets: [
        // C boundary: system libraries and the small shims over their macros and variadic calls, each used by
        // one Swift module only.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libcurl's variadic setopt/getinfo and its wiping allocation functions; OutboundHTTP only.
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        .target(
            name: "CHTTPShims",
            dependencies: ["CMicroHTTPD"],
            // libmicrohttpd's TLS runs on GnuTLS; cv_mhd.c verifies client certificates with it.
            linkerSettings: [.linkedLibrary("gnutls")]
        ),
        .target(name: "CCRC32C"),
        // A PKCS#11 module loaded with dlopen at run time (no link dependency on one), and the calls VaultHSM
        // makes through it; the declarations are Debian's libp11-kit-dev header.
        .target(name: "CPKCS11"),
        .target(name: "CProcessControl"),
        // The allocator OpenSSL's own allocations go to (mapped, not dumped, locked, wiped); VaultCrypto only.
        .target(name: "CSecureHeap"),
        // ThreadSanitizer annotations (no-ops outside sanitizer builds); VaultCore's Locked only.
        .target(name: "CSanitizerHooks"),

        // Swift libraries, by dependency weight.
        library("VaultCore", ["CSanitizerHooks"]),
        library("VaultCrypto", ["COpenSSL", "CSecureHeap", "VaultCore"]),
        // The master key in a PKCS#11 token (HSM custody of VaultCrypto's KeyEncryptionKey).
        library("VaultHSM", ["CPKCS11", "VaultCrypto", "VaultCore"]),
        library("CardKit"),
        library("VaultStore", ["CCRC32C", "VaultCrypto", "VaultCore"]),
        // The PostgreSQL record store (libpq), beside the file store; chosen by `databaseURL`.
        library("VaultStorePostgres", ["CLibPQ", "VaultStore", "VaultCrypto", "VaultCore"]),
        library("AdminChannel", ["VaultStore", "VaultCrypto", "VaultCore"]),
        // The risk engine's rules and the in-memory counters of the risk history.
        library("Risk", ["VaultStore", "VaultCore"]),
        // The business counters and histograms of /metrics (tokenizations, transactions, challenges, risk).
        library("BusinessMetrics", ["VaultCore"]),
        library("Payments", ["Risk", "BusinessMetrics", "CardKit", "VaultStore", "VaultCrypto", "VaultCore"]),
        library("Checkout", ["CardKit", "VaultStore", "VaultCrypto", "VaultCore"]),
        library("HTTPServer", ["CMicroHTTPD", "CHTTPShims", "VaultCore"]),
        // The outbound HTTPS client (libcurl) and the detokenize-and-forward domain over it.
        library("OutboundHTTP", ["CCurl", "CCurlShims", "VaultCore"]),
        library("Forward", ["OutboundHTTP", "Payments", "CardKit", "VaultStore", "VaultCrypto", "VaultCore"]),
        // Hooks and events: the merchant's hooks, the signed delivery engine over the outbox.
        library("Hooks", ["OutboundHTTP", "Payments", "VaultStore", "VaultCrypto", "VaultCore"]),
        // The Mangopay Account of OWNER users: SCA enrollment and wallet access, company number formats.
        library("OwnerAccounts", ["Payments", "VaultStore", "VaultCrypto", "VaultCore"]),
        // Bank accounts (IBAN), bank-wire pay-outs and the client's own wallets.
        library("Payouts", ["Payments", "CardKit", "VaultStore", "VaultCore"]),
        library(
            "MangopayAPI",
            [
                "Payments", "OwnerAccounts", "Payouts", "Risk", "BusinessMetrics", "Forward", "Hooks", "CardKit",
                "HTTPServer",
                "VaultCore",
            ]),
        library("MasterpassAPI", ["Checkout", "Payments", "CardKit", "HTTPServer", "VaultCore"]),
        library("Configuration", ["HTTPServer", "OutboundHTTP", "VaultCore"]),
        library(
            "CardVaultApp",
            [
                "Configuration", "MangopayAPI", "MasterpassAPI", "Payments", "OwnerAccounts", "Payouts", "Risk",
                "BusinessMetrics",
                "Checkout", "Forward", "Hooks",
                "OutboundHTTP", "AdminChannel", "HTTPServer", "VaultStore", "VaultCrypto", "CardKit", "VaultCore",
            ]),
        // Shared test fixtures (a raw HTTP client, child processes, environments); tests only.
        library("CardVaultTesting", ["Payments", "VaultStore", "VaultCrypto", "VaultCore"]),

        // Executables.
        .executableTarget(
            name: "cardvault",
            dependencies: [
                "CardVaultApp", "Configuration", "AdminChannel", "Payments", "VaultStore", "VaultStorePostgres",
                "VaultCrypto", "VaultHSM", "CardKit", "HTTPServer", "VaultCore", "CProcessControl",
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "cardvault-bench",
            dependencies: [
                "Payments", "AdminChannel", "VaultStore", "VaultStorePostgres", "VaultCrypto", "CardKit", "VaultCore",
            ],
            swiftSettings: swiftSettings
        ),

        // Tests mirror targets.
        tests("VaultCoreTests", ["VaultCore"]),
        tests("VaultCryptoTests", ["VaultCrypto", "VaultCore"], resources: [.copy("Vectors")]),
        // Against SoftHSM2 (Debian's softhsm2): tokens in a temporary directory of their own.
        tests("VaultHSMTests", ["VaultHSM", "VaultCrypto"]),
        tests("CardKitTests", ["CardKit"]),
        tests("RiskTests", ["Risk"]),
        tests("BusinessMetricsTests", ["BusinessMetrics"]),
        tests("VaultStoreTests", ["VaultStore", "VaultStorePostgres", "VaultCrypto", "VaultCore"]),
        tests("AdminChannelTests", ["AdminChannel", "VaultStore", "VaultCrypto", "VaultCore", "CardVaultTesting"]),
        tests(
            "PaymentsTests",
            ["Payments", "Risk", "CardKit", "VaultStore", "VaultCrypto", "VaultCore", "CardVaultTesting"]),
        tests("CheckoutTests", ["Checkout", "CardKit", "VaultStore", "VaultCrypto", "VaultCore"]),
        tests("HTTPServerTests", ["HTTPServer", "VaultCore", "CardVaultTesting"]),
        tests(
            "MangopayAPITests",
            [
                "MangopayAPI", "OwnerAccounts", "Payments", "HTTPServer", "VaultStore", "VaultCrypto", "VaultCore",
                "CardVaultTesting",
            ]),
        tests("PayoutsTests", ["Payouts", "Payments", "VaultStore", "VaultCore", "CardVaultTesting"]),
        tests("MasterpassAPITests", ["MasterpassAPI", "Checkout", "HTTPServer", "CardKit"]),
        tests("ConfigurationTests", ["Configuration", "HTTPServer", "VaultCore"]),
        tests("OutboundHTTPTests", ["OutboundHTTP"]),
        tests(
            "ForwardTests",
            ["Forward", "OutboundHTTP", "Payments", "CardKit", "VaultStore", "VaultCrypto", "VaultCore"]),
        tests(
            "CardVaultAppTests",
            [
                "CardVaultApp", "Configuration", "MasterpassAPI", "Checkout", "Payments", "AdminChannel", "HTTPServer",
                "VaultStore", "VaultCrypto", "CardKit", "VaultCore", "CardVaultTesting", "Forward", "OutboundHTTP",
            ]),
        tests(
            "HooksTests",
            ["Hooks", "OutboundHTTP", "Payments", "VaultStore", "VaultCrypto", "VaultCore", "CardVaultTesting"]),
        tests("CLITests", ["VaultCore", "CardVaultTesting"]),
    ]
)

// libFuzzer targets (Fuzz/Targets/<name>), one per parser of untrusted bytes. They link against libFuzzer's
// `main`, so they exist only when `make fuzz` asks for them (CARDVAULT_FUZZ=1, its own build directory and
// `-sanitize=fuzzer,address`); a normal `swift build` or `swift test` never sees them. See docs/fuzzing.md.
if ProcessInfo.processInfo.environment["CARDVAULT_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("fuzz-urlencoded-form", ["HTTPServer"]),
        ("fuzz-mangopay-json", ["MangopayAPI", "Payments"]),
        ("fuzz-mangopay-api", ["MangopayAPI", "Payments", "HTTPServer", "VaultStore", "VaultCrypto", "VaultCore"]),
        ("fuzz-checkout-request", ["Checkout", "HTTPServer"]),
        ("fuzz-callback-url", ["Checkout"]),
        ("fuzz-record-codec", ["Payments", "VaultStore"]),
        ("fuzz-request-headers", ["HTTPServer"]),
        ("fuzz-record-frame", ["FuzzStoreSupport", "VaultStore"]),
        ("fuzz-segment-scanner", ["FuzzStoreSupport", "VaultStore"]),
        ("fuzz-index-checkpoint", ["FuzzStoreSupport", "VaultStore"]),
        ("fuzz-key-file", ["FuzzStoreSupport", "VaultCrypto"]),
        ("fuzz-key-custody", ["FuzzSupport", "VaultCrypto"]),
        ("fuzz-store-recovery", ["FuzzStoreSupport", "VaultStore", "VaultCrypto", "VaultCore"]),
    ]
    package.targets.append(.target(name: "CFuzzDriver", path: "Fuzz/Targets/CFuzzDriver"))
    package.targets.append(
        .target(
            name: "FuzzSupport", dependencies: ["CFuzzDriver"], path: "Fuzz/Targets/FuzzSupport",
            swiftSettings: swiftSettings))
    package.targets.append(
        .target(
            name: "FuzzStoreSupport", dependencies: ["FuzzSupport", "VaultStore", "VaultCrypto", "VaultCore"],
            path: "Fuzz/Targets/FuzzStoreSupport", swiftSettings: swiftSettings))
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name, dependencies: target.dependencies + ["FuzzSupport"],
                path: "Fuzz/Targets/" + target.name,
                swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])],
                // gold fails on libFuzzer's archive next to SwiftPM's `--defsym main=`; lld links it.
                linkerSettings: [.unsafeFlags(["-use-ld=lld"])]))
    }
}
