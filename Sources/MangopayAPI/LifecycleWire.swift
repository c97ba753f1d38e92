import Payments

/// Renders the card lifecycle's resources (recurring registrations, pay-in kinds, transaction lists, BIN metadata)
/// as Mangopay v2.01 JSON: every key present (null when unset), dates as Unix seconds, amounts in minor units.
extension MangopayWire {
    static func recurringRegistration(_ registration: RecurringRegistration) -> MangopayJSON {
        let currency = registration.firstTransactionDebitedFunds.currency
        return .object([
            ("Id", .string(registration.id)), ("Tag", .text(registration.tag)),
            ("CreationDate", .int(registration.creationDate)), ("Status", .string(registration.status)),
            ("ResultCode", .text(registration.result?.code)), ("ResultMessage", .text(registration.result?.message)),
            (
                "CurrentState",
                .object([
                    ("PayinsLinked", .int(Int64(registration.machine.payInsLinked))),
                    (
                        "CumulatedDebitedAmount",
                        funds(Funds(currency: currency, amount: registration.cumulatedDebitedAmount))
                    ),
                    ("CumulatedFeesAmount", funds(Funds(currency: currency, amount: registration.cumulatedFeesAmount))),
                    ("LastPayinId", .text(registration.lastPayInId)),
                ])
            ),
            ("RecurringType", .string(registration.recurringType)),
            ("TotalAmount", .null), ("CycleNumber", .int(Int64(registration.machine.payInsLinked))),
            ("AuthorId", .string(registration.authorId)),
            ("CardId", .text(registration.cardId.isEmpty ? nil : registration.cardId)),
            ("CreditedUserId", .string(registration.creditedUserId)),
            ("CreditedWalletId", .string(registration.creditedWalletId)),
            ("Billing", party(registration.billing)), ("Shipping", party(registration.shipping)),
            ("EndDate", .integer(registration.endDate)), ("Frequency", .text(registration.frequency)),
            ("FixedNextAmount", .bool(registration.fixedNextAmount)),
            ("FractionedPayment", .bool(registration.fractionedPayment)),
            ("FreeCycles", .int(registration.freeCycles)),
            ("FirstTransactionDebitedFunds", funds(registration.firstTransactionDebitedFunds)),
            ("FirstTransactionFees", funds(registration.firstTransactionFees)),
            ("NextTransactionDebitedFunds", registration.nextTransactionDebitedFunds.map(funds) ?? .null),
            ("NextTransactionFees", registration.nextTransactionFees.map(funds) ?? .null),
            ("Migration", .bool(registration.migration)),
            ("PaymentType", .string(registration.paymentType ?? "CARD_DIRECT")),
        ])
    }

    /// A direct card pay-in's members adjusted for its kind: `PaymentType`, the registration of a recurring pay-in,
    /// the `PaymentData` of a wallet pay-in (its network and transaction id; never the token).
    static func adjusted(_ payIn: PayIn, _ rendered: MangopayJSON) -> MangopayJSON {
        guard let kind = payIn.payInKind, case .object(var members) = rendered else { return rendered }
        for index in members.indices {
            switch members[index].0 {
            case "PaymentType": members[index].1 = .string(kind.paymentType)
            case "CardId" where !kind.usesVaultedCard: members[index].1 = .null
            case "SecureModeReturnURL" where payIn.secureModeReturnURL.isEmpty: members[index].1 = .null
            default: break
            }
        }
        if kind.usesVaultedCard {
            members.append(("RecurringPayinRegistrationId", .text(payIn.recurringRegistrationId)))
        } else {
            members.append(
                (
                    "PaymentData",
                    .object([
                        ("TransactionId", .text(payIn.walletTransactionId)), ("Network", .text(payIn.walletNetwork)),
                        ("TokenData", .null),
                    ])
                ))
        }
        return .object(members)
    }

    /// An entry of a transaction list: a pay-in or a refund as their own reads render them.
    static func transaction(_ item: TransactionItem, challengeURL: (PayIn) -> String?) -> MangopayJSON {
        switch item {
        case .payIn(let made): payIn(made, redirectURL: challengeURL(made))
        case .refund(let made): refund(made)
        }
    }

    static func paymentMethodMetadata(_ metadata: PaymentMethodMetadata) -> MangopayJSON {
        .object([
            ("Type", .string(metadata.type)), ("Bin", .string(metadata.bin)), ("Token", .null),
            ("TokenFormat", .null), ("IssuerCountryCode", .text(metadata.issuerCountryCode)),
            ("IssuingBank", .text(metadata.issuingBank)),
            ("IssuingBankIsSandboxData", .bool(metadata.issuingBankIsSandboxData)),
            ("CardType", .text(metadata.cardType)),
            (
                "BinData",
                .array(
                    metadata.brand == nil
                        ? []
                        : [
                            .object([
                                ("SubType", .text(metadata.subType)), ("Brand", .text(metadata.network)),
                                ("CardType", .text(metadata.cardType)),
                            ])
                        ])
            ),
        ])
    }
}
