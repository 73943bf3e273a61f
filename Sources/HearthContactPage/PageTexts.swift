import Foundation
import HearthCore

/// The page's languages, Hearth's; the page picks one from `?lang=`, else the invitation's
/// language, else Accept-Language, else English.
typealias PageLanguage = UserLanguage

extension UserLanguage {
    /// The HTML lang attribute value: the BCP 47 tag itself (`zh-Hans` and `zh-Hant` pick the
    /// right fonts in browsers regardless of region).
    var htmlLang: String { self.rawValue }

    /// The language's name in itself, for the language switcher ("English", "简体中文", "繁體中文").
    var nativeName: String {
        switch self {
        case .english: "English"
        case .simplifiedChinese: "简体中文"
        case .traditionalChinese: "繁體中文"
        }
    }
}

/// What the page says, in one language. `person` is the name of the user who added the contact.
struct PageTexts: Sendable {
    let language: PageLanguage

    /// Before acting (GET): a title, one to three paragraphs, and the button's label.
    func confirmPrompt(person: String) -> (title: String, paragraphs: [String], button: String) {
        switch self.language {
        case .english:
            return (
                "Be \(person)'s emergency contact?",
                [
                    "\(person) uses Hearth to check in every day and would like you to be one of their emergency contacts.",
                    "You will get an email only if \(person) stops checking in, and one when they are safe again. Nothing else. You can stop at any time with the link in every email.",
                    "We will let \(person) know that you confirmed.",
                ],
                "Yes, I'll be an emergency contact"
            )
        case .simplifiedChinese:
            return (
                "担任 \(person) 的紧急联系人？",
                [
                    "\(person) 使用 Hearth 每天报平安，想请您担任紧急联系人。",
                    "确认后，只有在 \(person) 没有按时报平安时，您才会收到邮件；对方再次报平安时，我们也会告诉您。除此之外不会打扰您。每封邮件里都有停止接收的链接，您随时可以退出。",
                    "我们会告诉 \(person) 您已确认。",
                ],
                "确认担任紧急联系人"
            )
        case .traditionalChinese:
            return (
                "擔任 \(person) 的緊急聯絡人？",
                [
                    "\(person) 使用 Hearth 每天報平安，想請您擔任緊急聯絡人。",
                    "確認後，只有在 \(person) 沒有按時報平安時，您才會收到郵件；對方再次報平安時，我們也會通知您。除此之外不會打擾您。每封郵件裡都有停止接收的連結，您隨時可以退出。",
                    "我們會告訴 \(person) 您已確認。",
                ],
                "確認擔任緊急聯絡人"
            )
        }
    }

    func declinePrompt(person: String) -> (title: String, paragraphs: [String], button: String) {
        switch self.language {
        case .english:
            return (
                "Decline \(person)'s invitation?",
                [
                    "\(person) asked you to be an emergency contact on Hearth. If you decline, Hearth will not email you about \(person) again.",
                    "We will let \(person) know, so they can ask someone else.",
                ],
                "Decline"
            )
        case .simplifiedChinese:
            return (
                "婉拒 \(person) 的邀请？",
                [
                    "\(person) 邀请您在 Hearth 上担任紧急联系人。婉拒后，Hearth 将不会再就 \(person) 的事给您发邮件。",
                    "我们会告诉 \(person)，以便对方另请他人。",
                ],
                "婉拒邀请"
            )
        case .traditionalChinese:
            return (
                "婉拒 \(person) 的邀請？",
                [
                    "\(person) 邀請您在 Hearth 上擔任緊急聯絡人。婉拒後，Hearth 將不會再就 \(person) 的事寄郵件給您。",
                    "我們會告訴 \(person)，讓對方可以另請他人。",
                ],
                "婉拒邀請"
            )
        }
    }

    func optOutPrompt(person: String) -> (title: String, paragraphs: [String], button: String) {
        switch self.language {
        case .english:
            return (
                "Stop emails about \(person)?",
                [
                    "You will get no more email from Hearth about \(person), including alerts if they stop checking in.",
                    "We will let \(person) know, so they can ask someone else to be their emergency contact.",
                ],
                "Stop all emails"
            )
        case .simplifiedChinese:
            return (
                "停止接收关于 \(person) 的邮件？",
                [
                    "停止后，您将不会再收到 Hearth 关于 \(person) 的任何邮件，包括对方没有报平安时的提醒。",
                    "我们会告诉 \(person)，以便对方另请他人担任紧急联系人。",
                ],
                "停止接收所有邮件"
            )
        case .traditionalChinese:
            return (
                "停止接收關於 \(person) 的郵件？",
                [
                    "停止後，您將不會再收到 Hearth 關於 \(person) 的任何郵件，包括對方沒有報平安時的通知。",
                    "我們會告訴 \(person)，讓對方可以另請他人擔任緊急聯絡人。",
                ],
                "停止接收所有郵件"
            )
        }
    }

    /// After acting (POST), and for a link already used with that result.
    func confirmed(person: String) -> (title: String, paragraphs: [String]) {
        switch self.language {
        case .english:
            return (
                "Thank you! You are now \(person)'s emergency contact",
                [
                    "If \(person) stops checking in, we will email you so you can reach out. When they check in again, we will let you know.",
                    "Every email has a link to stop, if you ever need to.",
                ]
            )
        case .simplifiedChinese:
            return (
                "谢谢您！您已成为 \(person) 的紧急联系人",
                [
                    "如果 \(person) 没有按时报平安，我们会发邮件通知您，方便您联系对方；对方再次报平安时，我们也会告诉您。",
                    "每封邮件里都有停止接收的链接，如有需要，随时可以退出。",
                ]
            )
        case .traditionalChinese:
            return (
                "謝謝您！您已成為 \(person) 的緊急聯絡人",
                [
                    "如果 \(person) 沒有按時報平安，我們會寄郵件通知您，讓您能聯絡對方；對方再次報平安時，我們也會通知您。",
                    "每封郵件裡都有停止接收的連結，如有需要，隨時可以退出。",
                ]
            )
        }
    }

    func declined(person: String) -> (title: String, paragraphs: [String]) {
        switch self.language {
        case .english:
            return (
                "You declined",
                [
                    "Hearth will not email you about \(person) again. We have let \(person) know, so they can ask someone else.",
                    "If you change your mind, just tell \(person).",
                ]
            )
        case .simplifiedChinese:
            return (
                "您已婉拒邀请",
                [
                    "Hearth 将不会再就 \(person) 的事给您发邮件。我们已告诉 \(person)，对方可以另请他人。",
                    "如果您改变主意，直接告诉 \(person) 就可以。",
                ]
            )
        case .traditionalChinese:
            return (
                "您已婉拒邀請",
                [
                    "Hearth 將不會再就 \(person) 的事寄郵件給您。我們已告訴 \(person)，對方可以另請他人。",
                    "如果您改變主意，直接告訴 \(person) 就可以。",
                ]
            )
        }
    }

    func optedOut(person: String) -> (title: String, paragraphs: [String]) {
        switch self.language {
        case .english:
            return (
                "Emails stopped",
                [
                    "You will get no more email from Hearth about \(person). We have let \(person) know.",
                    "If you change your mind, just tell \(person).",
                ]
            )
        case .simplifiedChinese:
            return (
                "已停止接收邮件",
                [
                    "您将不会再收到 Hearth 关于 \(person) 的任何邮件。我们已告诉 \(person)。",
                    "如果您改变主意，直接告诉 \(person) 就可以。",
                ]
            )
        case .traditionalChinese:
            return (
                "已停止接收郵件",
                [
                    "您將不會再收到 Hearth 關於 \(person) 的任何郵件。我們已告訴 \(person)。",
                    "如果您改變主意，直接告訴 \(person) 就可以。",
                ]
            )
        }
    }

    /// A link that is unknown, mistyped, or for a contact since removed: says nothing about anyone.
    var notFound: (title: String, paragraphs: [String]) {
        switch self.language {
        case .english:
            return (
                "This link doesn't work",
                [
                    "It may be mistyped, or no longer in use. Please check that you opened the whole link from the email."
                ]
            )
        case .simplifiedChinese:
            return ("此链接无效", ["链接可能有误，或已不再使用。请确认您打开的是邮件中的完整链接。"])
        case .traditionalChinese:
            return ("此連結無效", ["連結可能有誤，或已不再使用。請確認您開啟的是郵件中的完整連結。"])
        }
    }

    /// An invitation whose 7 days passed: ask the person to send a new one.
    func expired(person: String) -> (title: String, paragraphs: [String]) {
        switch self.language {
        case .english:
            return (
                "This invitation has expired",
                [
                    "Invitations from Hearth work for 7 days. If you would like to be \(person)'s emergency contact, ask \(person) to send you a new one.",
                    "Nothing has been set up, so you will not get any alerts about \(person).",
                ]
            )
        case .simplifiedChinese:
            return (
                "此邀请已过期",
                [
                    "Hearth 的邀请在 7 天内有效。如果您愿意担任 \(person) 的紧急联系人，可以请 \(person) 重新发送一封邀请。",
                    "目前没有做任何设置，您不会收到关于 \(person) 的提醒。",
                ]
            )
        case .traditionalChinese:
            return (
                "此邀請已過期",
                [
                    "Hearth 的邀請在 7 天內有效。如果您願意擔任 \(person) 的緊急聯絡人，可以請 \(person) 重新寄送一封邀請。",
                    "目前沒有做任何設定，您不會收到關於 \(person) 的通知。",
                ]
            )
        }
    }

    /// A confirm/decline link used once already: says what the earlier answer was (`confirmed` true/false).
    func alreadyAnswered(person: String, confirmed: Bool) -> (title: String, paragraphs: [String]) {
        switch (self.language, confirmed) {
        case (.english, true):
            return (
                "You have already confirmed",
                [
                    "You are already \(person)'s emergency contact. There is nothing more to do.",
                    "To stop these emails, use the link at the bottom of any email from Hearth about \(person).",
                ]
            )
        case (.english, false):
            return (
                "You have already declined",
                [
                    "You declined to be \(person)'s emergency contact, so Hearth will not email you about \(person).",
                    "If you change your mind, just tell \(person).",
                ]
            )
        case (.simplifiedChinese, true):
            return (
                "您已经确认过了",
                [
                    "您已是 \(person) 的紧急联系人，无需再做任何操作。",
                    "如需停止接收，请使用 Hearth 关于 \(person) 的任何一封邮件底部的链接。",
                ]
            )
        case (.simplifiedChinese, false):
            return (
                "您已经婉拒过了",
                [
                    "您已婉拒担任 \(person) 的紧急联系人，Hearth 不会就 \(person) 的事给您发邮件。",
                    "如果您改变主意，直接告诉 \(person) 就可以。",
                ]
            )
        case (.traditionalChinese, true):
            return (
                "您已經確認過了",
                [
                    "您已是 \(person) 的緊急聯絡人，無需再做任何操作。",
                    "如需停止接收，請使用 Hearth 關於 \(person) 的任何一封郵件底部的連結。",
                ]
            )
        case (.traditionalChinese, false):
            return (
                "您已經婉拒過了",
                [
                    "您已婉拒擔任 \(person) 的緊急聯絡人，Hearth 不會就 \(person) 的事寄郵件給您。",
                    "如果您改變主意，直接告訴 \(person) 就可以。",
                ]
            )
        }
    }

    /// The page's footer line (what Hearth is, that no JavaScript or tracking is used) and the language switcher's label.
    var footer: String {
        switch self.language {
        case .english:
            "Hearth helps people check in every day, so that someone notices if they don't. This page uses no JavaScript and no tracking."
        case .simplifiedChinese:
            "Hearth 帮助人们每天报平安，万一没有报平安，关心他们的人能及时知道。本页面不使用 JavaScript，也不做任何追踪。"
        case .traditionalChinese:
            "Hearth 幫助人們每天報平安，萬一沒有報平安，關心他們的人能及時知道。本頁面不使用 JavaScript，也不做任何追蹤。"
        }
    }

    var languageLabel: String {
        switch self.language {
        case .english: "Language"
        case .simplifiedChinese: "语言"
        case .traditionalChinese: "語言"
        }
    }

    /// The product name shown in the page title.
    static let product = "Hearth"
}
