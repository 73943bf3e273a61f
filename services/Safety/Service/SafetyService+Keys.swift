import Foundation
import HearthContracts
public import HearthRPC
import HearthStore
import SwiftProtobuf

extension SafetyService {
    /// Reads the data key file again and seals under its newest key what another key sealed
    /// (`hearth rotate-data-key`). A file that lacks a key still in use, or has another index
    /// key, is refused before anything changes.
    public func reloadDataKeys(_ request: Hearth_Safety_V1_ReloadDataKeysRequest, _ context: RPCContext)
        async throws -> Hearth_Safety_V1_ReloadDataKeysResponse
    {
        let store = self.store
        guard store.keys.file != nil else {
            throw RPCError(.failedPrecondition, "this safety process was started without a data key file")
        }
        let ring: DataKeyRing
        do {
            // Off the event loop: a value under each key in use, which the new ring must open.
            let samples = try await store.sealedSamples()
            ring = try store.keys.reload { ring in try SealedSample.check(DataKeys(ring: ring), opens: samples) }
        } catch let error as DataKeysDoNotMatch {
            throw RPCError(.failedPrecondition, error.description)
        } catch let error as DataKeyFileInvalid {
            throw RPCError(.failedPrecondition, error.description)
        }
        let resealed = try await store.resealAll()
        return .with {
            $0.sealingKeyID = ring.sealing.id
            $0.keyIds = ring.ids
            $0.resealed = UInt64(resealed)
        }
    }
}
