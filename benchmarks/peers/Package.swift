// swift-tools-version: 6.1
import PackageDescription

// The peers of the side-by-side echo benchmark (scripts/bench-peers). A package of its own: the main
// Hearth package never compiles it, and none of its dependencies (gRPC, NIOExtras) reach Hearth's build.

/// The main package's settings: Swift 6 language mode, explicit `any`, and imports that must name
/// every module whose members a file uses.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "HearthBenchmarkPeers",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "peer-nio-echo", targets: ["PeerNIOEcho"]),
        .executable(name: "peer-grpc-echo", targets: ["PeerGRPCEcho"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        // A bare SwiftNIO length-prefixed echo: the floor for any NIO server.
        .executableTarget(
            name: "PeerNIOEcho",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
            ],
            swiftSettings: swiftSettings
        ),
        // grpc-swift-2 over HTTP/2: an echo server and a client that measures it.
        .executableTarget(
            name: "PeerGRPCEcho",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
