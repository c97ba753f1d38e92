// swift-tools-version:6.0
import PackageDescription

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
        .target(name: "VaultAPI", dependencies: ["Payments", "HTTPServer", "VaultCore"], swiftSettings: swiftSettings),

        // Executables.
        .executableTarget(
            name: "cardvault",
            dependencies: ["VaultAPI", "Payments", "VaultStore", "VaultCrypto", "CardKit", "HTTPServer", "VaultCore"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "cardvault-bench",
            dependencies: ["VaultAPI", "Payments", "VaultStore", "VaultCrypto", "CardKit", "HTTPServer", "VaultCore"],
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
        .testTarget(name: "CLITests", dependencies: ["VaultCore"], swiftSettings: swiftSettings),
    ]
)
