public import Foundation
public import HearthStore

/// A store file in a folder of its own, removed with it.
public final class TemporaryStoreFile: Sendable {
    public let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-store-\(UUID())")
    public var path: String { self.folder.appendingPathComponent("safety.sqlite").path }
    public var location: StoreLocation { .file(self.path) }

    public init() throws {
        try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: self.folder)
    }
}
