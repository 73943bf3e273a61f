// swift-tools-version: 6.1
// The libFuzzer targets: over the wire runtime (frame decoder and dispatcher), and over the
// photo path (the normalizer and libvips behind it). Its own package so
// that the main build and tests never compile it; built by scripts/fuzz with
// -sanitize=fuzzer,address and -enable-testing (it drives the runtime's internal types).
import Foundation
import PackageDescription

/// The main package's identity is the name of the folder it was cloned into.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
    name: "HearthFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // libFuzzer's entry, shared by the fuzzers.
        .target(name: "FuzzDriver", swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "frame-fuzzer",
            dependencies: [
                "FuzzDriver",
                .product(name: "HearthRPC", package: root.lastPathComponent),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "photo-fuzzer",
            dependencies: ["FuzzDriver", .product(name: "CheckinsService", package: root.lastPathComponent)],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
