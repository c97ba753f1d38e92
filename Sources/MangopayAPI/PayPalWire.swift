import Payments

/// Renders PayPal pay-ins as Mangopay v2.01 JSON (`PaymentType: PAYPAL`, `ExecutionType: WEB`), and binds their
/// request bodies: the newer `/payins/payment-methods/paypal[/recurring]` and the older `/payins/paypal/web`.
extension MangopayWire {
    static func payPalPayIn(_ payIn: PayIn, order: PayPalOrder, redirectURL: String?) -> MangopayJSON {
        let result = payIn.result
        // PayPal tells who paid once the buyer approved; before that (or after a cancel) those fields are null.
        let buyer = payIn.machine.state == .succeeded ? order.buyer : nil
        var members: [(String, MangopayJSON)] = [
            ("Id", .string(payIn.id)), ("Tag", .text(payIn.tag)), ("CreationDate", .int(payIn.creationDate)),
            ("AuthorId", .string(payIn.authorId)), ("CreditedUserId", .text(payIn.creditedUserId)),
            ("DebitedFunds", funds(payIn.debitedFunds)), ("CreditedFunds", funds(payIn.creditedFunds)),
            ("Fees", funds(payIn.fees)), ("Status", .string(payIn.status)), ("ResultCode", .text(result?.code)),
            ("ResultMessage", .text(result?.message)), ("ExecutionDate", .integer(payIn.executionDate)),
            ("Type", .string("PAYIN")), ("Nature", .string("REGULAR")),
            ("CreditedWalletId", .text(payIn.creditedWalletId)), ("DebitedWalletId", .null),
            ("PaymentType", .string("PAYPAL")), ("ExecutionType", .string("WEB")),
            (
                "ReturnURL",
                .text(order.returnURL.isEmpty ? nil : PayInService.returnURL(order.returnURL, transactionId: payIn.id))
            ),
            ("RedirectURL", .text(redirectURL)), ("CancelURL", .text(order.cancelURL)),
            ("StatementDescriptor", .text(payIn.statementDescriptor)), ("Culture", .text(payIn.culture)),
            ("Shipping", party(payIn.shipping)), ("ShippingPreference", .text(order.shippingPreference)),
            ("Reference", .text(order.reference)), ("LineItems", .array(order.lineItems.map(lineItem))),
            ("PaypalBuyerAccountEmail", .text(buyer?.email)), ("PaypalOrderID", .string(order.orderId)),
            ("PaypalPayerID", .text(buyer?.payerId)), ("BuyerCountry", .text(buyer?.country)),
            ("BuyerFirstname", .text(buyer?.firstName)), ("BuyerLastname", .text(buyer?.lastName)),
            ("BuyerPhone", .text(buyer?.phone)), ("Trackings", .null), ("DataCollectionId", .null),
        ]
        if payIn.recurringRegistrationId != nil {
            members.append(("RecurringPayinRegistrationId", .text(payIn.recurringRegistrationId)))
        }
        if order.isLegacy {
            members.append(
                (
                    "ShippingAddress",
                    .object([
                        ("RecipientName", .text(order.recipientName)), ("Address", address(payIn.shipping?.address)),
                    ])
                ))
        }
        return .object(members)
    }

    static func lineItem(_ item: PayPalLineItem) -> MangopayJSON {
        .object([
            ("Name", .text(item.name)), ("Quantity", .integer(item.quantity)),
            ("UnitAmount", .integer(item.unitAmount)),
            ("TaxAmount", .integer(item.taxAmount)), ("Description", .text(item.description)),
            ("Category", .text(item.category)), ("Sku", .text(item.sku)),
        ])
    }
}

extension MangopayFields {
    /// A PayPal pay-in body: the one-off call's fields, the recurring call's registration, or with `legacy` the
    /// older call's (`ShippingAddress` instead of `Shipping`, no line items).
    mutating func payPalPayInRequest(legacy: Bool) -> PayPalPayInRequest {
        var request = PayPalPayInRequest()
        request.isLegacy = legacy
        request.authorId = string("AuthorId")
        request.creditedUserId = string("CreditedUserId")
        request.creditedWalletId = string("CreditedWalletId")
        request.debitedFunds = money("DebitedFunds")
        request.fees = money("Fees")
        request.returnURL = string("ReturnURL")
        request.cancelURL = string("CancelURL")
        request.shippingPreference = string("ShippingPreference")
        request.reference = string("Reference")
        request.recurringPayinRegistrationId = string("RecurringPayinRegistrationId")
        request.details.tag = string("Tag")
        request.details.statementDescriptor = string("StatementDescriptor")
        request.details.culture = string("Culture")
        if legacy {
            _ = object("ShippingAddress") { shipping -> Void? in
                request.recipientName = shipping.string("RecipientName")
                request.details.shipping = PartyAddress(address: shipping.address("Address"))
                return nil
            }
        } else {
            request.details.shipping = party("Shipping")
            request.lineItems = objects("LineItems") { item in
                PayPalLineItem(
                    name: item.string("Name"), quantity: item.integer("Quantity"),
                    unitAmount: item.amount("UnitAmount"),
                    taxAmount: item.amount("TaxAmount"), description: item.string("Description"),
                    category: item.string("Category"), sku: item.string("Sku"))
            }
        }
        return request
    }
}
