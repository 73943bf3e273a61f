import Foundation
import HearthCore

/// What happened to a contact that the user hears about.
enum ContactEvent: String, Sendable, CaseIterable {
    case confirmed, declined
    case optedOut = "opted_out"
    case bounced
    /// The push kind (`safety.contact_confirmed`, ...): the alert row's kind is "contact_" + rawValue.
    var kind: String { "contact_\(self.rawValue)" }
}

extension MessageKind {
    /// The push telling the user that a contact stored before invitations existed did not confirm
    /// within their first invitation's 7 days, and so no longer receives alarms
    /// (``ContactConsent/endGrace(at:)``). Not a ``ContactEvent``: the contact did nothing.
    static let graceEnded = "contact_grace_ended"
}

/// What the switch says to and about emergency contacts before they receive any alarm: the
/// invitation (double opt-in), the links under every email to a contact, and the pushes to
/// the user when a contact answers or cannot be reached.
extension AlertTexts {
    /// The invitation a new emergency contact gets: who added them (self.name), what an emergency
    /// contact receives and when (an email if NAME has not checked in for `thresholdHours` hours; an all-clear
    /// email when they check in again; nothing else, no marketing), that nothing is sent before they confirm,
    /// and until when the links work (`expiresAt` in the user's zone via localTime). `contactName` may be
    /// empty (then a neutral greeting). The links themselves are NOT in the body: the sender appends
    /// `contactLinks(...)` below it at send time.
    func invitationEmail(contactName: String, thresholdHours: Int, expiresAt: Date) -> (subject: String, body: String) {
        let contact = contactName.trimmingWhitespace()
        let until = self.localTime(expiresAt)
        switch self.language {
        case .english:
            let greeting = contact.isEmpty ? "Hello," : "Hi \(contact),"
            return (
                "\(self.name) asked you to be their emergency contact",
                """
                \(greeting)

                \(self.name) uses \(self.product) to check in every day and would like you to be one of their emergency contacts.

                What this means: if \(self.name) has not checked in for \(thresholdHours) hours, we will email you so you can try to reach them. When they check in again, we will email you to let you know they are safe. That is all: no newsletters, no marketing.

                You will get no alerts unless you confirm. If you would rather not, you can decline, and we will not email you about \(self.name) again.

                Please answer with the links below. The Confirm and Decline links work until \(until); after that, \(self.name) can send you a new invitation.
                """
            )
        case .simplifiedChinese:
            let greeting = contact.isEmpty ? "您好：" : "\(contact)，您好："
            return (
                "\(self.name) 邀请您担任紧急联系人",
                """
                \(greeting)

                \(self.name) 使用 \(self.product) 每天报平安，想请您担任紧急联系人。

                担任紧急联系人意味着：如果 \(self.name) 连续 \(thresholdHours) 小时没有报平安，我们会发邮件通知您，方便您及时联系对方；对方再次报平安时，我们也会发邮件告诉您一切安好。除此之外，我们不会给您发送任何其他邮件，也没有任何广告或推广。

                在您确认之前，我们不会给您发送任何提醒。如果您不方便担任，也可以婉拒，我们将不会再就 \(self.name) 的事给您发邮件。

                请通过下方的链接回复。“确认”和“婉拒”链接在 \(until) 前有效；过期后，可以请 \(self.name) 重新发送邀请。
                """
            )
        case .traditionalChinese:
            let greeting = contact.isEmpty ? "您好：" : "\(contact)，您好："
            return (
                "\(self.name) 邀請您擔任緊急聯絡人",
                """
                \(greeting)

                \(self.name) 使用 \(self.product) 每天報平安，想請您擔任緊急聯絡人。

                擔任緊急聯絡人代表：如果 \(self.name) 連續 \(thresholdHours) 小時沒有報平安，我們會寄郵件通知您，讓您能及時聯絡對方；對方再次報平安時，我們也會寄郵件告訴您一切安好。除此之外，我們不會寄給您任何其他郵件，也沒有任何廣告或行銷內容。

                在您確認之前，我們不會寄送任何通知給您。如果您不方便擔任，也可以婉拒，我們將不會再就 \(self.name) 的事寄郵件給您。

                請透過下方的連結回覆。「確認」和「婉拒」連結在 \(until) 前有效；逾期後，可以請 \(self.name) 重新寄送邀請。
                """
            )
        }
    }

    /// The block appended at send time to every email to a contact. `confirm` and `decline` are given
    /// only for an invitation (then: "Confirm: URL" / "Decline: URL" lines with a short sentence each);
    /// `optOut` always: a line saying they can stop all email from the product about NAME: URL.
    ///
    /// Paragraphs apart by a blank line, each URL alone at the end of its line (so that mail
    /// clients link it whole), no blank line before or after: the sender joins body and block
    /// with one ("\n\n").
    func contactLinks(confirm: String?, decline: String?, optOut: String) -> String {
        var paragraphs: [String] = []
        switch self.language {
        case .english:
            if let confirm {
                paragraphs.append("Yes, I will be \(self.name)'s emergency contact:\nConfirm: \(confirm)")
            }
            if let decline {
                paragraphs.append(
                    "No, thank you (\(self.product) will not email you about \(self.name) again):\nDecline: \(decline)"
                )
            }
            paragraphs.append("You can stop all email from \(self.product) about \(self.name) at any time: \(optOut)")
        case .simplifiedChinese:
            if let confirm {
                paragraphs.append("我愿意担任 \(self.name) 的紧急联系人：\n确认：\(confirm)")
            }
            if let decline {
                paragraphs.append("不方便担任（\(self.product) 将不会再就 \(self.name) 的事给您发邮件）：\n婉拒：\(decline)")
            }
            paragraphs.append("如果您不想再收到 \(self.product) 关于 \(self.name) 的任何邮件，可以随时在此停止：\(optOut)")
        case .traditionalChinese:
            if let confirm {
                paragraphs.append("我願意擔任 \(self.name) 的緊急聯絡人：\n確認：\(confirm)")
            }
            if let decline {
                paragraphs.append("不方便擔任（\(self.product) 將不會再就 \(self.name) 的事寄郵件給您）：\n婉拒：\(decline)")
            }
            paragraphs.append("如果您不想再收到 \(self.product) 關於 \(self.name) 的任何郵件，可以隨時在此停止：\(optOut)")
        }
        return paragraphs.joined(separator: "\n\n")
    }

    /// How a contact's label (``ContactRecord/label``) is said past a sentence's start and at it:
    /// as it is, or, empty (neither their name nor their address could be read), as words that
    /// name no one.
    private func naming(_ label: String) -> (String, atStart: String) {
        label.isEmpty ? self.language.unnamedContact : (label, label)
    }

    /// The push the user gets when a contact answered or could not be reached. `contact` is the
    /// contact's name, or their address when they have no name.
    func contactPush(_ event: ContactEvent, contact: String) -> (title: String, body: String) {
        let (contact, sentenceContact) = self.naming(contact)
        switch self.language {
        case .english:
            switch event {
            case .confirmed:
                return (
                    "Emergency contact confirmed",
                    "\(sentenceContact) confirmed and will be emailed if you stop checking in."
                )
            case .declined:
                return (
                    "Invitation declined",
                    "\(sentenceContact) declined to be your emergency contact. You may want to add someone else."
                )
            case .optedOut:
                return (
                    "Emergency contact opted out",
                    "\(sentenceContact) stopped all emails from \(self.product) and will no longer be alerted. You may want to add someone else."
                )
            case .bounced:
                return (
                    "Email could not be delivered",
                    "We couldn't deliver email to \(contact). Please check the address in your emergency contacts."
                )
            }
        case .simplifiedChinese:
            switch event {
            case .confirmed:
                return ("紧急联系人已确认", "\(contact) 已确认担任您的紧急联系人。如果您没有按时报平安，我们会发邮件通知对方。")
            case .declined:
                return ("紧急联系人邀请未被接受", "\(contact) 婉拒了担任您的紧急联系人。您可以添加其他联系人。")
            case .optedOut:
                return ("紧急联系人已停止接收邮件", "\(contact) 已停止接收 \(self.product) 的所有邮件，今后将不会再收到提醒。您可以添加其他联系人。")
            case .bounced:
                return ("邮件无法送达", "我们无法将邮件送达 \(contact)，请检查紧急联系人的邮箱地址。")
            }
        case .traditionalChinese:
            switch event {
            case .confirmed:
                return ("緊急聯絡人已確認", "\(contact) 已確認擔任您的緊急聯絡人。如果您沒有按時報平安，我們會寄郵件通知對方。")
            case .declined:
                return ("緊急聯絡人邀請未被接受", "\(contact) 婉拒了擔任您的緊急聯絡人。您可以新增其他聯絡人。")
            case .optedOut:
                return ("緊急聯絡人已停止接收郵件", "\(contact) 已停止接收 \(self.product) 的所有郵件，之後將不會再收到通知。您可以新增其他聯絡人。")
            case .bounced:
                return ("郵件無法送達", "我們無法將郵件寄送至 \(contact)，請檢查緊急聯絡人的電子郵件地址。")
            }
        }
    }

    /// The push the user gets when a contact added before invitations existed let their first
    /// invitation's 7 days pass without confirming: they no longer get alarms until they confirm,
    /// and the user may send the invitation again. `contact`: their name, else their address.
    func graceEndedPush(contact: String) -> (title: String, body: String) {
        let contact = self.naming(contact).atStart
        switch self.language {
        case .english:
            return (
                "Emergency contact not confirmed",
                "\(contact) has not confirmed your invitation. Until they do, they will not be emailed if you stop checking in. You can send the invitation again from your emergency contacts."
            )
        case .simplifiedChinese:
            return (
                "紧急联系人尚未确认",
                "\(contact) 没有确认您的邀请。在对方确认之前，如果您没有按时报平安，我们将不会再发邮件通知对方。您可以在紧急联系人中重新发送邀请。"
            )
        case .traditionalChinese:
            return (
                "緊急聯絡人尚未確認",
                "\(contact) 沒有確認您的邀請。在對方確認之前，如果您沒有按時報平安，我們將不會再寄郵件通知對方。您可以在緊急聯絡人中重新寄送邀請。"
            )
        }
    }
}
