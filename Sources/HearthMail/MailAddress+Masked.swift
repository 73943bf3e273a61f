import HearthCore

extension MailAddress {
    /// The address as logs show it (``MaskedAddress``): `m***@example.com`.
    public var masked: String { MaskedAddress.mask(self.address) }
}
