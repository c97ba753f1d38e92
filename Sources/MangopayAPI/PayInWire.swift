import Payments
import Risk

/// Renders pay-ins, card validations and refunds as Mangopay v2.01 JSON: every key present (null when
/// unset), dates as Unix seconds, amounts in minor units.
extension MangopayWire {
    static func funds(_ funds: Funds) -> MangopayJSON {
        .object([("Currency", .string(funds.currency)), ("Amount", .int(funds.amount))])
    }

    /// `BrowserInfo`, each loose field in the JSON type its client sent (``BrowserInfo/AlternateTypes``).
    static func browserInfo(_ info: BrowserInfo?) -> MangopayJSON {
        guard let info else { return .null }
        let alternate = info.alternateTypes ?? []
        func flag(_ value: Bool?, _ asNumber: BrowserInfo.AlternateTypes) -> MangopayJSON {
            guard let value else { return .null }
            return alternate.contains(asNumber) ? .int(value ? 1 : 0) : .bool(value)
        }
        func number(_ value: Int?, _ asText: BrowserInfo.AlternateTypes) -> MangopayJSON {
            guard let value else { return .null }
            return alternate.contains(asText) ? .string(String(value)) : .int(Int64(value))
        }
        var offset = MangopayJSON.text(info.timeZoneOffset)
        if alternate.contains(.timeZoneOffsetAsNumber), let text = info.timeZoneOffset,
            let minutes = MangopayFields.decimalInteger(text)
        {
            offset = .int(minutes)
        }
        return .object([
            ("AcceptHeader", .text(info.acceptHeader)), ("JavaEnabled", flag(info.javaEnabled, .javaEnabledAsNumber)),
            ("JavascriptEnabled", flag(info.javascriptEnabled, .javascriptEnabledAsNumber)),
            ("Language", .text(info.language)), ("ColorDepth", number(info.colorDepth, .colorDepthAsText)),
            ("ScreenHeight", number(info.screenHeight, .screenHeightAsText)),
            ("ScreenWidth", number(info.screenWidth, .screenWidthAsText)), ("TimeZoneOffset", offset),
            ("UserAgent", .text(info.userAgent)),
        ])
    }

    static func party(_ party: PartyAddress?) -> MangopayJSON {
        guard let party else { return .null }
        return .object([
            ("FirstName", .text(party.firstName)), ("LastName", .text(party.lastName)),
            ("Address", address(party.address)),
        ])
    }

    static func cardInfo(_ info: CardInfo) -> MangopayJSON {
        .object([
            ("BIN", .string(info.bin)), ("IssuingBank", .text(info.issuingBank)),
            ("IssuerCountryCode", .text(info.issuerCountryCode)), ("Type", .text(info.type)),
            ("Brand", .string(info.brand)), ("SubType", .text(info.subType)),
        ])
    }

    /// The members every card transaction shows: status, result, 3-D Secure and browser data.
    static func transactionMembers(_ payIn: PayIn, redirectURL: String?) -> [(String, MangopayJSON)] {
        let result = payIn.result
        return [
            ("Id", .string(payIn.id)), ("Tag", .text(payIn.tag)), ("CreationDate", .int(payIn.creationDate)),
            ("AuthorId", .string(payIn.authorId)), ("Status", .string(payIn.status)),
            ("ResultCode", .text(result?.code)), ("ResultMessage", .text(result?.message)),
            ("ExecutionDate", .integer(payIn.executionDate)), ("CardId", .string(payIn.cardId)),
            ("SecureMode", .string(payIn.secureMode.rawValue)),
            ("SecureModeReturnURL", .string(payIn.secureModeReturnURL)),
            ("SecureModeRedirectURL", .text(redirectURL)), ("SecureModeNeeded", .bool(payIn.secureModeNeeded)),
            ("Culture", .text(payIn.culture)), ("IpAddress", .text(payIn.ipAddress)),
            ("BrowserInfo", browserInfo(payIn.browserInfo)), ("Requested3DSVersion", .null),
            ("Applied3DSVersion", .string("V2_1")), ("CardInfo", cardInfo(payIn.cardInfo)),
            ("PaymentCategory", .text(payIn.paymentCategory)),
            ("ProfilingAttemptReference", .text(payIn.profilingAttemptReference)),
        ]
    }

    static func payIn(_ payIn: PayIn, redirectURL: String?) -> MangopayJSON {
        if let order = payIn.payPal { return payPalPayIn(payIn, order: order, redirectURL: redirectURL) }
        return adjusted(payIn, directPayIn(payIn, redirectURL: redirectURL))
    }

    private static func directPayIn(_ payIn: PayIn, redirectURL: String?) -> MangopayJSON {
        .object(
            transactionMembers(payIn, redirectURL: redirectURL) + [
                ("CreditedUserId", .text(payIn.creditedUserId)), ("DebitedFunds", funds(payIn.debitedFunds)),
                ("CreditedFunds", funds(payIn.creditedFunds)), ("Fees", funds(payIn.fees)), ("Type", .string("PAYIN")),
                ("Nature", .string("REGULAR")), ("CreditedWalletId", .text(payIn.creditedWalletId)),
                ("DebitedWalletId", .null),
                ("PaymentType", .string(payIn.capturedFrom == nil ? "CARD" : "PREAUTHORIZED")),
                ("ExecutionType", .string("DIRECT")),
                ("SecurityInfo", .object([("AVSResult", .string("NO_CHECK"))])),
                ("StatementDescriptor", .text(payIn.statementDescriptor)), ("Billing", party(payIn.billing)),
                ("Shipping", party(payIn.shipping)), ("PreferredCardNetwork", .text(payIn.preferredCardNetwork)),
            ] + captureMembers(payIn))
    }

    static func cardValidation(_ validation: PayIn, redirectURL: String?) -> MangopayJSON {
        let validity: String
        switch validation.machine.state {
        case .succeeded: validity = "VALID"
        case .failed: validity = "INVALID"
        case .created, .awaitingChallenge: validity = "UNKNOWN"
        }
        return .object(
            transactionMembers(validation, redirectURL: redirectURL) + [
                ("Type", .string("CARD_VALIDATION")), ("Validity", .string(validity)),
            ])
    }

    static func refund(_ refund: Refund) -> MangopayJSON {
        .object([
            ("Id", .string(refund.id)), ("Tag", .text(refund.tag)), ("CreationDate", .int(refund.creationDate)),
            ("AuthorId", .string(refund.authorId)), ("CreditedUserId", .text(refund.creditedUserId)),
            ("DebitedFunds", funds(refund.debitedFunds)), ("CreditedFunds", funds(refund.creditedFunds)),
            ("Fees", funds(refund.fees)), ("Status", .string(refund.status)),
            ("ResultCode", .string(refund.result.code)), ("ResultMessage", .string(refund.result.message)),
            ("ExecutionDate", .integer(refund.executionDate)), ("Type", .string("PAYOUT")),
            ("Nature", .string("REFUND")),
            ("InitialTransactionId", .string(refund.payInId)), ("InitialTransactionType", .string("PAYIN")),
            ("DebitedWalletId", .string(refund.debitedWalletId)), ("CreditedWalletId", .null),
            ("RefundReason", .object([("RefundReasonMessage", .null), ("RefundReasonType", .string("OTHER"))])),
        ])
    }

    static func assessment(_ assessment: PayInAssessment) -> MangopayJSON {
        .object([
            ("TransactionId", .string(assessment.transactionId)), ("Score", .int(Int64(assessment.score))),
            ("Decision", .string(assessment.decision.rawValue.uppercased())),
            ("CreationDate", .int(assessment.creationDate)),
            (
                "Reasons",
                .array(
                    assessment.reasons.map { reason in
                        .object([
                            ("Rule", .string(reason.rule)), ("Detail", .string(reason.detail)),
                            ("Points", .int(Int64(reason.points))),
                        ])
                    })
            ),
        ])
    }
}
