// swift-tools-version: 6.1
import PackageDescription

/// One set of settings for every target: Swift 6 language mode, explicit `any`, and imports
/// that must name every module whose members a file uses.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hearth", targets: ["hearth"]),
        .library(name: "HearthRPC", targets: ["HearthRPC"]),
        .library(name: "HearthStore", targets: ["HearthStore"]),
        // The client runtime and every service's contract (messages, typed clients): what an
        // app or another Swift service depends on to call Hearth. No GRDB, libvips or services.
        .library(name: "HearthContracts", targets: ["HearthContracts"]),
        // For the photo fuzzer (fuzz/), which drives its normalizer.
        .library(name: "CheckinsService", targets: ["CheckinsService"]),
        // Generates each contract's method table, server protocol and client (scripts/gen-proto).
        .executable(name: "protoc-gen-hearth", targets: ["protoc-gen-hearth"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // Shared libraries.
        .target(
            name: "HearthCore",
            dependencies: ["AllocatorTuning"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HearthRPC",
            dependencies: [
                "HearthCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            exclude: ["Generated/README.md"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HearthStore",
            dependencies: [
                "HearthCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "HearthGateway",
            dependencies: [
                "HearthCore",
                "HearthRPC",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "HearthTLS",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "HearthPush",
            dependencies: [
                "HearthCore",
                "HearthScheduler",
                "HearthStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // libvips (Debian's libvips-dev) for photos, behind a small non-variadic C shim.
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        .target(name: "VipsShim", dependencies: ["CVips"]),
        // One glibc allocator setting for every Hearth process (mallopt is not in Swift's Glibc).
        .target(name: "AllocatorTuning"),

        // Services: one module each, model / store / service inside.
        // The generated messages of every service's contract (proto/hearth/*/v1) and typed
        // clients, public, so that services calling each other and the tools share one copy.
        .target(
            name: "HearthContracts",
            dependencies: ["HearthCore", "HearthRPC", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "EchoService",
            dependencies: [
                "HearthRPC",
                "HearthContracts",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "services/Echo",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "CheckinsService",
            dependencies: [
                "HearthCore",
                "HearthContracts",
                "HearthRelay",
                "HearthPush",
                "HearthScheduler",
                "VipsShim",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "HearthRPC",
                "HearthStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "services/Checkins",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "TasksService",
            dependencies: [
                "HearthCore",
                "HearthContracts",
                "HearthPush",
                "HearthRelay",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "services/Tasks",
            swiftSettings: swiftSettings
        ),

        // The due-time scheduler: a timer to the earliest due item, no periodic scan (safety
        // alerts, task prompts).
        .target(
            name: "HearthScheduler",
            dependencies: [
                "HearthCore",
                "HearthRPC",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // A durable outbox of calls to other services (activity forwarded to safety).
        .target(
            name: "HearthRelay",
            dependencies: [
                "HearthCore",
                "HearthContracts",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // PostgreSQL for a store several processes share (safety's replicas): the pool run as a
        // lifecycle service, named append-only migrations, failures answered UNAVAILABLE.
        .target(
            name: "HearthPostgres",
            dependencies: [
                "HearthCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // Email over SMTP (no SMTP library in the mirror): MIME messages and the conversation.
        .target(
            name: "HearthMail",
            dependencies: [
                "HearthCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "RoutinesService",
            dependencies: [
                "HearthCore",
                "HearthContracts",
                "HearthRelay",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "services/Routines",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "SafetyService",
            dependencies: [
                "HearthCore",
                "HearthContracts",
                "HearthMail",
                "HearthPostgres",
                "HearthPush",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "services/Safety",
            swiftSettings: swiftSettings
        ),

        // The page behind the links in emails to emergency contacts (Confirm, Decline, Opt out),
        // served by the gateway process on Hummingbird; it asks safety over RPC.
        .target(
            name: "HearthContactPage",
            dependencies: [
                "HearthCore",
                "HearthContracts",
                "HearthRPC",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),

        // The `hearth` command line: commands in libraries so tests can drive them, a thin executable.
        // What every command shares: targets, durations, callers' credentials, TLS, secrets.
        .target(
            name: "HearthCommandLine",
            dependencies: [
                "HearthCore",
                "HearthTLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The load and fault tools (`hearth bench*`, `hearth fault-writer`): clients only.
        .target(
            name: "HearthBench",
            dependencies: [
                "HearthCommandLine",
                "HearthCore",
                "HearthRPC",
                "HearthContracts",
                "HearthGateway",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Running the processes: `hearth up`, `serve`, `call`, `health`, `token`.
        .target(
            name: "HearthCommands",
            dependencies: [
                "HearthCommandLine",
                "HearthBench",
                "HearthCore",
                "HearthRPC",
                "HearthPostgres",
                "HearthStore",
                "HearthGateway",
                "HearthContactPage",
                "HearthTLS",
                "HearthPush",
                "EchoService",
                "HearthContracts",
                "CheckinsService",
                "RoutinesService",
                "SafetyService",
                "TasksService",
                "HearthMail",
                "HearthRelay",
                "HearthScheduler",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "hearth",
            dependencies: [
                "HearthCommands", "HearthCore", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "protoc-gen-hearth",
            dependencies: [
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "SwiftProtobufPluginLibrary", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),

        // A child process for the kill -9 durability test: writes rows and prints each acknowledged id.
        .executableTarget(
            name: "hearth-store-probe",
            dependencies: ["HearthStore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/StoreProbe",
            swiftSettings: swiftSettings
        ),

        // A child process for the safety kill -9 test: seeds overdue switches, or runs the scheduler.
        .executableTarget(
            name: "hearth-safety-probe",
            dependencies: [
                "SafetyService",
                "HearthContracts",
                "HearthCore",
                "HearthMail",
                "HearthPush",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Tests/SafetyProbe",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "HearthTestSupport",
            dependencies: [
                "HearthPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                "HearthRPC",
                "HearthStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/HearthTestSupport",
            exclude: ["smtp_sink.py", "headless_browser.py"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthRPCTests",
            dependencies: [
                "HearthRPC",
                "HearthCore",
                "HearthTestSupport",
                "EchoService",
                "HearthContracts",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthGatewayTests",
            dependencies: [
                "HearthGateway",
                "HearthTLS",
                .product(name: "JWTKit", package: "jwt-kit"),
                "HearthRPC",
                "HearthCore",
                "HearthTestSupport",
                "EchoService",
                "HearthContracts",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CheckinsTests",
            dependencies: [
                "CheckinsService",
                "HearthBench",
                "HearthContracts",
                "VipsShim",
                "HearthTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                "HearthRPC",
                "HearthCore",
                "HearthStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthCoreTests",
            dependencies: ["HearthCore", "HearthTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthSchedulerTests",
            dependencies: [
                "HearthScheduler",
                "HearthCore",
                "HearthTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthMailTests",
            dependencies: [
                "HearthCore",
                "HearthMail",
                "HearthTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SafetyTests",
            dependencies: [
                "SafetyService",
                "HearthPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "hearth-safety-probe",
                "CheckinsService",
                "RoutinesService",
                "HearthRelay",
                "HearthContracts",
                "HearthCore",
                "HearthMail",
                "HearthPush",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                "HearthTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ContactPageTests",
            dependencies: [
                "HearthContactPage",
                "HearthScheduler",
                "HearthStore",
                "SafetyService",
                "HearthContracts",
                "HearthCore",
                "HearthMail",
                "HearthPush",
                "HearthRPC",
                "HearthTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AuthorizationTests",
            dependencies: [
                "CheckinsService",
                "RoutinesService",
                "SafetyService",
                "TasksService",
                "HearthContracts",
                "HearthCore",
                "HearthMail",
                "HearthPush",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                "HearthTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TasksTests",
            dependencies: [
                "TasksService",
                "HearthContracts",
                "HearthCore",
                "HearthPush",
                "HearthRelay",
                "HearthRPC",
                "HearthScheduler",
                "HearthStore",
                "HearthTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoutinesTests",
            dependencies: [
                "RoutinesService",
                "HearthRelay",
                "CheckinsService",
                "HearthContracts",
                "HearthCore",
                "HearthRPC",
                "HearthStore",
                "HearthTestSupport",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthPushTests",
            dependencies: [
                "HearthPush",
                "HearthScheduler",
                "HearthCore",
                "HearthStore",
                "HearthTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthStoreTests",
            dependencies: [
                "HearthStore",
                "HearthCore",
                "HearthRPC",
                "HearthContracts",
                "HearthTestSupport",
                "hearth-store-probe",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthCommandsTests",
            dependencies: [
                "HearthCommands",
                "HearthBench",
                "HearthCommandLine",
                "HearthRPC",
                "HearthTestSupport",
                "EchoService",
                "HearthContracts",
                "CheckinsService",
                "HearthStore",
                "HearthGateway",
                "HearthPush",
                "HearthMail",
                "HearthScheduler",
                "hearth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
