import Foundation
import HearthCore

/// What the switch says, in the user's language: the emails to contacts and the pushes to
/// the user. Pure: everything it needs is passed in.
struct AlertTexts: Sendable {
    enum Language: String, Sendable {
        case english = "en"
        case simplifiedChinese = "zh-Hans"
        case traditionalChinese = "zh-Hant"

        /// Who the person is, to a contact, when their name is not known: past a sentence's
        /// start, and at it.
        var unnamedPerson: (String, String) {
            switch self {
            case .english: ("this person", "This person")
            case .simplifiedChinese: ("对方", "对方")
            case .traditionalChinese: ("對方", "對方")
            }
        }

        /// The person as a sentence says them past its start and at it: `name`, trimmed, or when
        /// empty (it could not be read), ``unnamedPerson``.
        func naming(_ name: String) -> (String, atStart: String) {
            let known = name.trimmingWhitespace()
            return known.isEmpty ? self.unnamedPerson : (known, known)
        }

        /// Who a contact is, to the user, when neither their name nor their address is known.
        var unnamedContact: (String, String) {
            switch self {
            case .english: ("a contact you added", "A contact you added")
            case .simplifiedChinese: ("您添加的一位联系人", "您添加的一位联系人")
            case .traditionalChinese: ("您新增的一位聯絡人", "您新增的一位聯絡人")
            }
        }
    }

    let language: Language
    /// The person the switch watches over, as a sentence names them past its start: their name,
    /// or, when it is not known (it could not be read), words that name no one
    /// (``Language/unnamedPerson``): an alarm goes out all the same.
    let name: String
    /// The person as a sentence names them at its start.
    let sentenceName: String
    let timeZone: TimeZone
    /// What the app is called where the emails and pushes say it ("Hearth Alert: ...").
    let product: String
    /// Unless the operator names it (`--product-name`).
    static let defaultProduct = "Hearth"

    init(language: String, name: String, timeZone: TimeZone, product: String) {
        self.language = Language(rawValue: language) ?? .english
        (self.name, self.sentenceName) = self.language.naming(name)
        self.timeZone = timeZone
        self.product = product
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

    /// "Dear Ana," with the contact's name; a neutral greeting without one.
    func greeting(_ contactName: String) -> String {
        let name = contactName.trimmingWhitespace()
        switch self.language {
        case .english: return name.isEmpty ? "Hello," : "Dear \(name),"
        case .simplifiedChinese: return name.isEmpty ? "您好：" : "亲爱的 \(name)："
        case .traditionalChinese: return name.isEmpty ? "您好：" : "親愛的 \(name)："
        }
    }

    /// The email each contact gets at the deadline, as the plan's template has it: the product
    /// and the person in the subject, the contact greeted by name, how long since the last
    /// check-in (in the user's zone), that it may be a false alarm, what to do, the privacy
    /// note. `lastCheckIn` nil: the person never checked in, and the email says since when the
    /// switch has been armed (`armedAt`), not a check-in that never was.
    func alertEmail(contactName: String, lastCheckIn: Date?, armedAt: Date, now: Date) -> (
        subject: String, body: String
    ) {
        let greeting = self.greeting(contactName)
        let name = self.name
        let product = self.product
        switch self.language {
        case .english:
            let silence =
                lastCheckIn.map {
                    "\(self.sentenceName) hasn't checked in for \(Self.hours(since: $0, now: now)) hours. "
                        + "Their last check-in was \(self.localTime($0))."
                } ?? "\(self.sentenceName) has not checked in since the switch was armed on \(self.localTime(armedAt))."
            return (
                "\(product) Alert: \(name) hasn't checked in",
                """
                \(greeting)

                \(self.sentenceName) uses \(product) to check in every day and named you as an emergency contact.

                \(silence)

                This may be a false alarm: their phone may be off or out of battery, or they may simply have forgotten.

                Please try to reach \(name) now, by phone or in person. If you cannot reach them and are worried about their safety, contact local emergency services.

                Privacy: \(product) sends this only because \(name) asked us to. We share nothing else about them, and you will get another email when they check in again.
                """
            )
        case .simplifiedChinese:
            let silence =
                lastCheckIn.map {
                    "\(name) 已 \(Self.hours(since: $0, now: now)) 小时没有报平安。最后一次报平安的时间是 \(self.localTime($0))。"
                } ?? "自 \(self.localTime(armedAt)) 开启平安守护以来，\(name) 还没有报过平安。"
            return (
                "\(product) 警报：\(name) 尚未报平安",
                """
                \(greeting)

                \(name) 使用 \(product) 每天报平安，并将您设为紧急联系人。

                \(silence)

                这可能是误报：对方的手机可能关机或没电，也可能只是忘了报平安。

                请您现在尝试通过电话或当面联系 \(name)。如果无法联系上并担心其安全，请联系当地紧急服务。

                隐私说明：\(product) 仅应 \(name) 的要求发送此邮件，不会分享其他任何信息。对方再次报平安时，您会收到另一封邮件。
                """
            )
        case .traditionalChinese:
            let silence =
                lastCheckIn.map {
                    "\(name) 已 \(Self.hours(since: $0, now: now)) 小時沒有報平安。最後一次報平安的時間是 \(self.localTime($0))。"
                } ?? "自 \(self.localTime(armedAt)) 開啟平安守護以來，\(name) 還沒有報過平安。"
            return (
                "\(product) 警報：\(name) 尚未報平安",
                """
                \(greeting)

                \(name) 使用 \(product) 每天報平安，並將您設為緊急聯絡人。

                \(silence)

                這可能是誤報：對方的手機可能關機或沒電，也可能只是忘了報平安。

                請您現在嘗試以電話或當面聯絡 \(name)。如果無法聯絡上並擔心其安全，請聯絡當地緊急服務。

                隱私說明：\(product) 僅應 \(name) 的要求寄出此郵件，不會分享其他任何資訊。對方再次報平安時，您會收到另一封郵件。
                """
            )
        }
    }

    /// The words of a message the switch records (``SwitchMessage/Words``), as it leaves the
    /// switch: its last check-in (nil: never), when its period began, and the contact's name for
    /// an email to one ("" otherwise, or unknown).
    func text(
        of words: SwitchMessage.Words,
        lastCheckIn: Date?,
        periodStart: Date,
        contactName: String,
        at now: Date
    ) -> (subject: String, body: String) {
        switch words {
        case .due(.warning(let minutes)):
            let push = self.warningPush(minutesBefore: minutes)
            return (push.title, push.body)
        case .due(.alert):
            return self.alertEmail(contactName: contactName, lastCheckIn: lastCheckIn, armedAt: periodStart, now: now)
        case .allClear(let checkedInAt):
            return self.allClearEmail(checkedInAt: checkedInAt)
        case .reminder:
            let push = self.reminderPush()
            return (push.title, push.body)
        case .none:
            return ("", "")
        }
    }

    /// The email each alerted contact gets when the person checks in again.
    func allClearEmail(checkedInAt: Date) -> (subject: String, body: String) {
        let when = self.localTime(checkedInAt)
        switch self.language {
        case .english:
            return (
                "All clear: \(self.name) checked in",
                "\(self.sentenceName) checked in on \(self.product) at \(when). No action is needed. Thank you for looking out for them."
            )
        case .simplifiedChinese:
            return (
                "平安：\(self.name) 已报平安",
                "\(self.name) 已于 \(when) 在 \(self.product) 报平安，您无需采取任何行动。感谢您的关心。"
            )
        case .traditionalChinese:
            return (
                "平安：\(self.name) 已報平安",
                "\(self.name) 已於 \(when) 在 \(self.product) 報平安，您無需採取任何行動。感謝您的關心。"
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

    /// The daily reminder push, with the plan's words: it builds the habit, contacts or not.
    func reminderPush() -> (title: String, body: String) {
        switch self.language {
        case .english: ("Daily check-in", "Time to check in! Give a smile to those who care about you.")
        case .simplifiedChinese: ("每日报平安", "该报平安了！给关心您的人一个微笑吧。")
        case .traditionalChinese: ("每日報平安", "該報平安了！給關心您的人一個微笑吧。")
        }
    }

    /// A message to the user's own email or device, clearly a test.
    func test() -> (subject: String, body: String) {
        switch self.language {
        case .english:
            return (
                "[TEST] \(self.product) safety check",
                "This is a test from \(self.product). Nothing is wrong; no one else was contacted."
            )
        case .simplifiedChinese:
            return ("[测试] \(self.product) 平安检查", "这是 \(self.product) 的测试消息。一切正常，我们没有联系任何其他人。")
        case .traditionalChinese:
            return ("[測試] \(self.product) 平安檢查", "這是 \(self.product) 的測試訊息。一切正常，我們沒有聯絡任何其他人。")
        }
    }
}
