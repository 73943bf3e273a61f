import Foundation
import HearthCore

/// What the switch says, in the user's language: the emails to contacts and the pushes to
/// the user. Pure: everything it needs is passed in.
struct AlertTexts: Sendable {
    enum Language: String, Sendable {
        case english = "en"
        case simplifiedChinese = "zh-Hans"
        case traditionalChinese = "zh-Hant"
    }

    let language: Language
    /// The person the switch watches over.
    let name: String
    let timeZone: TimeZone

    init(language: String, name: String, timeZone: TimeZone) {
        self.language = Language(rawValue: language) ?? .english
        self.name = name
        self.timeZone = timeZone
    }

    /// "Jan 12, 2026 at 10:00 PM PST"; "2026年1月12日 下午10:00 [PST]" in Chinese.
    func localTime(_ date: Date) -> String {
        switch self.language {
        case .english:
            return DateFormats.string(
                date,
                pattern: "MMM d, yyyy 'at' h:mm a zzz",
                locale: "en_US_POSIX",
                zone: self.timeZone
            )
        case .simplifiedChinese, .traditionalChinese:
            let locale = self.language == .simplifiedChinese ? "zh_Hans" : "zh_Hant"
            let time = DateFormats.string(date, pattern: "yyyy年M月d日 ah:mm", locale: locale, zone: self.timeZone)
            let zone = DateFormats.string(date, pattern: "zzz", locale: "en_US_POSIX", zone: self.timeZone)
            return "\(time) [\(zone)]"
        }
    }

    /// Whole hours from the last check-in to `now`.
    static func hours(since lastCheckIn: Date, now: Date) -> Int {
        max(0, Int(now.timeIntervalSince(lastCheckIn) / 3600))
    }

    /// The email each contact gets at the deadline.
    func alertEmail(lastCheckIn: Date, now: Date) -> (subject: String, body: String) {
        let hours = Self.hours(since: lastCheckIn, now: now)
        let when = self.localTime(lastCheckIn)
        switch self.language {
        case .english:
            return (
                "\(self.name) has not checked in for \(hours) hours",
                """
                \(self.name) uses Hearth to check in every day and named you as an emergency contact.

                They have not checked in for \(hours) hours. Their last check-in was \(when).

                What to do: please try to reach \(self.name) now, by phone or in person. If you cannot reach them and are worried about their safety, contact local emergency services.

                Privacy: Hearth sends this only because \(self.name) asked us to. We share nothing else about them, and you will get another email when they check in again.
                """
            )
        case .simplifiedChinese:
            return (
                "\(self.name) 已 \(hours) 小时没有报平安",
                """
                \(self.name) 使用 Hearth 每天报平安，并将您设为紧急联系人。

                \(self.name) 已 \(hours) 小时没有报平安。最后一次报平安的时间是 \(when)。

                请您现在尝试通过电话或当面联系 \(self.name)。如果无法联系上并担心其安全，请联系当地紧急服务。

                隐私说明：Hearth 仅应 \(self.name) 的要求发送此邮件，不会分享其他任何信息。对方再次报平安时，您会收到另一封邮件。
                """
            )
        case .traditionalChinese:
            return (
                "\(self.name) 已 \(hours) 小時沒有報平安",
                """
                \(self.name) 使用 Hearth 每天報平安，並將您設為緊急聯絡人。

                \(self.name) 已 \(hours) 小時沒有報平安。最後一次報平安的時間是 \(when)。

                請您現在嘗試以電話或當面聯絡 \(self.name)。如果無法聯絡上並擔心其安全，請聯絡當地緊急服務。

                隱私說明：Hearth 僅應 \(self.name) 的要求寄出此郵件，不會分享其他任何資訊。對方再次報平安時，您會收到另一封郵件。
                """
            )
        }
    }

    /// The email each alerted contact gets when the person checks in again.
    func allClearEmail(checkedInAt: Date) -> (subject: String, body: String) {
        let when = self.localTime(checkedInAt)
        switch self.language {
        case .english:
            return (
                "All clear: \(self.name) checked in",
                "\(self.name) checked in on Hearth at \(when). No action is needed. Thank you for looking out for them."
            )
        case .simplifiedChinese:
            return (
                "平安：\(self.name) 已报平安",
                "\(self.name) 已于 \(when) 在 Hearth 报平安，您无需采取任何行动。感谢您的关心。"
            )
        case .traditionalChinese:
            return (
                "平安：\(self.name) 已報平安",
                "\(self.name) 已於 \(when) 在 Hearth 報平安，您無需採取任何行動。感謝您的關心。"
            )
        }
    }

    /// The push to the user before the deadline.
    func warningPush(minutesBefore: Int) -> (title: String, body: String) {
        let english =
            minutesBefore >= 60
            ? "\(minutesBefore / 60) hour\(minutesBefore >= 120 ? "s" : "")" : "\(minutesBefore) minutes"
        let chineseHans = minutesBefore >= 60 ? "\(minutesBefore / 60) 小时" : "\(minutesBefore) 分钟"
        let chineseHant = minutesBefore >= 60 ? "\(minutesBefore / 60) 小時" : "\(minutesBefore) 分鐘"
        switch self.language {
        case .english:
            return (
                "Time to check in",
                "You haven't checked in. Tap now or we'll email your emergency contact in \(english)."
            )
        case .simplifiedChinese:
            return ("该报平安了", "您还没有报平安。请立即点按，否则我们将在 \(chineseHans) 后发邮件给您的紧急联系人。")
        case .traditionalChinese:
            return ("該報平安了", "您還沒有報平安。請立即點按，否則我們將在 \(chineseHant) 後寄郵件給您的緊急聯絡人。")
        }
    }

    /// The daily reminder push.
    func reminderPush() -> (title: String, body: String) {
        switch self.language {
        case .english: ("Daily check-in", "Tap to let your people know you're OK.")
        case .simplifiedChinese: ("每日报平安", "点按一下，让关心您的人知道您一切安好。")
        case .traditionalChinese: ("每日報平安", "點按一下，讓關心您的人知道您一切安好。")
        }
    }

    /// A message to the user's own email or device, clearly a test.
    func test() -> (subject: String, body: String) {
        switch self.language {
        case .english:
            return (
                "[TEST] Hearth safety check", "This is a test from Hearth. Nothing is wrong; no one else was contacted."
            )
        case .simplifiedChinese:
            return ("[测试] Hearth 平安检查", "这是 Hearth 的测试消息。一切正常，我们没有联系任何其他人。")
        case .traditionalChinese:
            return ("[測試] Hearth 平安檢查", "這是 Hearth 的測試訊息。一切正常，我們沒有聯絡任何其他人。")
        }
    }
}
