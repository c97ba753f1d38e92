// swift-tools-version:6.0
import PackageDescription
import Foundation

/// One settings block for every Swift target: Swift 6 language mode (the tools version's default),
/// strict concurrency, and the upcoming features the codebase already follows.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "CardVault",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "cardvault", targets: ["cardvault"]),
        .executable(name: "cardvault-bench", targets: ["cardvault-bench"]),
    ],
    targets: [
        // C boundary: system libraries and the small shims over their macros and variadic calls.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // libcurl's variadic setopt/getinfo and its wiping allocation functions; OutboundHTTP only.
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        .target(
            name: "CShims",
            dependencies: ["COpenSSL", "CMicroHTTPD"],
            // libmicrohttpd's TLS runs on GnuTLS; cv_mhd.c verifies client certificates with it.
            linkerSettings: [.linkedLibrary("gnutls")]
        ),

        // Swift libraries, by dependency weight.
        // ThreadSanitizer annotations (no-ops outside sanitizer builds); VaultCore's Locked only.
        .target(name: "CSanitizerHooks"),
        .target(name: "VaultCore", dependencies: ["CSanitizerHooks"], swiftSettings: swiftSettings),
        .target(name: "VaultCrypto", dependencies: ["COpenSSL", "CShims", "VaultCore"], swiftSettings: swiftSettings),
        .target(name: "CardKit", swiftSettings: swiftSettings),
        .target(name: "VaultStore", dependencies: ["CShims", "VaultCrypto", "VaultCore"], swiftSettings: swiftSettings),
        .target(
            name: "Payments",
            dependencies: ["CardKit", "VaultStore", "VaultCrypto", "VaultCore"],
            swiftSettings: swiftSettings
        ),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CShims", "VaultCore"], swiftSettings: swiftSettings),
        // The outbound HTTPS client (libcurl) and the detokenize-and-forward domain over it.
        .target(name: "OutboundHTTP", dependencies: ["CCurl", "CCurlShims", "VaultCore"], swiftSettings: swiftSettings),
        .target(
            name: "Forward",
            dependencies: ["OutboundHTTP", "Payments", "CardKit", "VaultStore", "VaultCrypto", "VaultCore"],
            swiftSettings: swiftSettings
        ),
        .target(name: "VaultAPI", dependencies: ["Payments", "HTTPServer", "VaultCore", "Forward", "OutboundHTTP"], swiftSettings: swiftSettings),

        // Executables.
        .executableTarget(
            name: "cardvault",
            dependencies: [
                "VaultAPI", "Payments", "VaultStore", "VaultCrypto", "CardKit", "HTTPServer", "VaultCore", "Forward",
                "OutboundHTTP",
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "cardvault-bench",
            dependencies: ["VaultAPI", "Payments", "VaultStore", "VaultCrypto", "CardKit", "HTTPServer", "VaultCore", "OutboundHTTP"],
            swiftSettings: swiftSettings
        ),

        // Tests mirror targets.
        .testTarget(name: "VaultCoreTests", dependencies: ["VaultCore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "VaultCryptoTests",
            dependencies: ["VaultCrypto"],
            resources: [.copy("Vectors")],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "CardKitTests", dependencies: ["CardKit"], swiftSettings: swiftSettings),
        .testTarget(name: "VaultStoreTests", dependencies: ["VaultStore", "VaultCrypto"], swiftSettings: swiftSettings),
        .testTarget(name: "PaymentsTests", dependencies: ["Payments", "CardKit", "VaultStore"], swiftSettings: swiftSettings),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "VaultCore"], swiftSettings: swiftSettings),
        .testTarget(name: "VaultAPITests", dependencies: ["VaultAPI", "HTTPServer", "Payments"], swiftSettings: swiftSettings),
        .testTarget(name: "OutboundHTTPTests", dependencies: ["OutboundHTTP"], swiftSettings: swiftSettings),
        .testTarget(
            name: "ForwardTests", dependencies: ["Forward", "OutboundHTTP", "Payments", "CardKit", "VaultStore"],
            swiftSettings: swiftSettings),
        .testTarget(name: "CLITests", dependencies: ["VaultCore"], swiftSettings: swiftSettings),
    ]
)

// libFuzzer targets (Fuzz/Targets/<name>), one per parser of untrusted bytes. They link against libFuzzer's
// `main`, so they exist only when `make fuzz` asks for them (CARDVAULT_FUZZ=1, its own build directory and
// `-sanitize=fuzzer,address`); a normal `swift build` or `swift test` never sees them. See docs/fuzzing.md.
if ProcessInfo.processInfo.environment["CARDVAULT_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("fuzz-urlencoded-form", ["HTTPServer"]),
        ("fuzz-mangopay-json", ["VaultAPI", "Payments"]),
        ("fuzz-mangopay-api", ["VaultAPI", "Payments", "HTTPServer", "VaultStore", "VaultCrypto", "VaultCore"]),
        ("fuzz-checkout-request", ["Payments", "HTTPServer"]),
        ("fuzz-callback-url", ["Payments"]),
        ("fuzz-request-headers", ["HTTPServer"]),
        ("fuzz-record-frame", ["FuzzStoreSupport", "VaultStore"]),
        ("fuzz-segment-scanner", ["FuzzStoreSupport", "VaultStore"]),
        ("fuzz-index-checkpoint", ["FuzzStoreSupport", "VaultStore"]),
        ("fuzz-key-file", ["FuzzStoreSupport", "VaultCrypto"]),
        ("fuzz-store-recovery", ["FuzzStoreSupport", "VaultStore", "VaultCrypto", "VaultCore"]),
    ]
    package.targets.append(.target(name: "CFuzzDriver", path: "Fuzz/Targets/CFuzzDriver"))
    package.targets.append(
        .target(name: "FuzzSupport", dependencies: ["CFuzzDriver"], path: "Fuzz/Targets/FuzzSupport", swiftSettings: swiftSettings))
    package.targets.append(
        .target(
            name: "FuzzStoreSupport", dependencies: ["FuzzSupport", "VaultStore", "VaultCrypto", "VaultCore"],
            path: "Fuzz/Targets/FuzzStoreSupport", swiftSettings: swiftSettings))
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name, dependencies: target.dependencies + ["FuzzSupport"], path: "Fuzz/Targets/" + target.name,
                swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])],
                // gold fails on libFuzzer's archive next to SwiftPM's `--defsym main=`; lld links it.
                linkerSettings: [.unsafeFlags(["-use-ld=lld"])]))
    }
}
