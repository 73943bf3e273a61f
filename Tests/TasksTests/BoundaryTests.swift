import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import TasksService

/// Limits of activity offers pinned at their boundary.
@Suite("Activities: boundaries", .timeLimit(.minutes(1)))
struct ActivityBoundaryTests {
    @Test("RespondToOffer SNOOZE_60: the offer comes back exactly 60 minutes later, not a second sooner")
    func snoozeSixty() async throws {
        // 2026-06-01 12:00 in New York (EDT): no quiet hours, so nothing moves the snooze.
        let noon = at("2026-06-01T16:00:00Z")
        try await withTasksSystem(now: noon) { system in
            let service = ActivitiesService(sharingStoreOf: system.service)
            let context = callContext("ana")

            var preferences = Hearth_Tasks_V1_SetOfferPreferencesRequest()
            preferences.enabled = true
            preferences.dailyCap = 2
            preferences.minSpacingMinutes = 0
            preferences.timeZone = "America/New_York"
            _ = try await service.setOfferPreferences(preferences, context)

            let activityID = try await service.createActivity(
                .with {
                    $0.title = "Gym workout"
                    $0.repeat = .none
                    $0.priority = 2
                },
                context
            ).id
            var rule = Hearth_Tasks_V1_SetLocationRuleRequest()
            rule.activityID = activityID
            rule.place = .with {
                $0.label = "Gym"
                $0.latitude = 40.7128
                $0.longitude = -74.0060
                $0.radiusM = 150
            }
            rule.trigger = .leave
            rule.cooldownMinutes = 1
            _ = try await service.setLocationRule(rule, context)

            var report = Hearth_Tasks_V1_ReportLocationEventRequest()
            report.activityID = activityID
            report.trigger = .leave
            report.occurredAt = Google_Protobuf_Timestamp(date: noon)
            report.appState = .background
            report.clientEventID = "leave-1"
            guard case .offer(let offer)? = try await service.reportLocationEvent(report, context).decision else {
                Issue.record("no offer")
                return
            }
            #expect(offer.deliverAt.date == noon)

            let respond: () async throws -> Hearth_Tasks_V1_RespondToOfferResponse = {
                try await service.respondToOffer(
                    .with {
                        $0.offerID = offer.offerID
                        $0.action = .snooze60
                    },
                    context
                )
            }
            let snoozed = try await respond()
            #expect(snoozed.offer.state == .answered && snoozed.offer.action == .snooze60)
            #expect(snoozed.snoozedOffer.snoozed)
            #expect(snoozed.snoozedOffer.deliverAt.date == noon.addingTimeInterval(3600))
            #expect(try await respond() == snoozed, "the same answer again")

            let pending: () async throws -> [String] = {
                try await service.listPendingOffers(.init(), context).offers.map(\.offerID)
            }
            try await system.advance(to: noon.addingTimeInterval(3599))
            #expect(try await pending().isEmpty, "not back a second before 60 minutes")
            try await system.advance(to: noon.addingTimeInterval(3600))
            #expect(try await pending() == [snoozed.snoozedOffer.offerID])
        }
    }
}
