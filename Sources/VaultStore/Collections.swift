/// Every collection the daemon stores records in, in one table, so no two kinds of record share a name and
/// `cardvault inspect` and the docs can list them. Names are part of the data on disk: never rename one.
///
/// VaultStore only names them; the domain modules own what the records hold (see CONTRIBUTING.md, "adding a
/// record kind").
public enum Collections {
    // MARK: Merchant API (Payments)
    public static let clients = "clients"
    public static let bearerTokens = "bearer-tokens"
    /// The bearer tokens by their expiry (a ``DeadlineIndex``): `<12 digits>:<token digest>`.
    public static let bearerTokenDeadlines = "bearer-token-deadlines"
    public static let users = "users"
    public static let wallets = "wallets"
    public static let walletsByUser = "wallets-by-user"
    public static let registrations = "card-registrations"
    /// The open registrations by their next deadline (a ``DeadlineIndex``): `<12 digits>:clientId:registrationId`.
    public static let registrationDeadlines = "card-registration-deadlines"
    public static let cards = "cards"
    public static let cardsByUser = "cards-by-user"
    public static let cardsByFingerprint = "cards-by-fingerprint"
    /// The vaulted card numbers, one record per card; the file store seals every value.
    public static let vault = "card-numbers"
    public static let profilingAttempts = "profiling-attempts"
    public static let idempotency = "idempotent-responses"
    /// The idempotency entries by their expiry (a ``DeadlineIndex``): `<12 digits>:<entry id>`.
    public static let idempotencyDeadlines = "idempotent-response-deadlines"

    // MARK: Pay-ins, validations, refunds and risk (Payments)
    public static let payIns = "payins"
    public static let validations = "card-validations"
    public static let refunds = "refunds"
    public static let transactionsByCard = "transactions-by-card"
    public static let refundsByPayIn = "refunds-by-payin"
    public static let challengesAwaiting = "challenges-awaiting"
    public static let profilingAssessments = "profiling-assessments"
    /// Preauthorizations and deposit preauthorizations (their authorization and their hold on the card).
    public static let preauthorizations = "preauthorizations"
    public static let depositPreauthorizations = "deposit-preauthorizations"
    /// The waiting holds with their expiration date, for the sweeper.
    public static let holdsExpiring = "holds-expiring"
    public static let riskAttempts = "risk-attempts"
    public static let riskFailures = "risk-failures"
    public static let riskSuccesses = "risk-successes"

    // MARK: Card lifecycle: recurring registrations, transaction lists, erasure audit (Payments)
    public static let recurringRegistrations = "recurring-registrations"
    /// Index of the transactions (pay-ins, refunds) a user is party to: `clientId:userId:transactionId`.
    public static let transactionsByUser = "transactions-by-user"
    /// Index of the transactions that credit or debit a wallet: `clientId:walletId:transactionId`.
    public static let transactionsByWallet = "transactions-by-wallet"
    /// One audit record per vaulted card number erased when its user was closed (never the number).
    public static let cardErasures = "card-erasures"

    // MARK: Events and their delivery (Payments writes them; the hook engine consumes the outbox)
    /// One record per change of a resource (`GET /events`).
    public static let events = "events"
    /// Events not yet handed to the hook delivery engine, written in the same batch as the event.
    public static let eventOutbox = "event-outbox"
    /// The merchants' hooks, one per `EventType` per client (Hooks).
    public static let hooks = "hooks"
    /// `clientId:EVENT_TYPE` → the hook id: keeps one hook per event type.
    public static let hooksByEvent = "hooks-by-event"
    /// The per-client secret that signs hook deliveries (`CardVault-Signature`).
    public static let hookSecrets = "hook-secrets"
    /// Events whose delivery was given up (3 days of failures, or an INVALID hook), kept for the operator.
    public static let hookFailures = "hook-failures"

    // MARK: Hosted checkout (Checkout)
    public static let checkoutRegistrations = "checkout-registrations"
    public static let checkoutMerchants = "checkout-merchants"
    public static let checkoutSessions = "checkout-sessions"
    public static let checkoutTransactions = "checkout-transactions"
    public static let checkoutWallets = "checkout-wallets"
    public static let checkoutPairingTransactions = "checkout-pairing-transactions"
    public static let checkoutPairings = "checkout-pairings"
    public static let checkoutAudit = "checkout-audit"

    // MARK: The checkout's shoppers in the merchant API (CardVaultApp's card-vault adapter)
    public static let checkoutShoppers = "checkout-shoppers"

    // MARK: The record sweeper (VaultStore)
    /// One record per kind found through a deadline index: when the sweeper last read the kind whole.
    public static let sweeperState = "sweeper-state"

    // MARK: Web card pay-ins (hosted payment page)
    public static let webPayIns = "web-payins"

    // MARK: SCA of OWNER users (OwnerAccounts)
    public static let scaEnrollments = "sca-enrollments"

    // MARK: Bank accounts, bank-wire pay-outs and client wallets (Payouts); KYC documents (OwnerAccounts)
    /// A user's or the client's bank accounts: `clientId:bankAccountId`.
    public static let bankAccounts = "bank-accounts"
    /// Index of a user's bank accounts: `clientId:userId:bankAccountId`.
    public static let bankAccountsByUser = "bank-accounts-by-user"
    public static let payOuts = "payouts"
    /// The client's FEES and CREDIT wallets, once one has moved: `clientId:FEES_EUR`.
    public static let clientWallets = "client-wallets"
    public static let kycDocuments = "kyc-documents"
    /// Index of a user's KYC documents: `clientId:userId:documentId`.
    public static let kycDocumentsByUser = "kyc-documents-by-user"

    /// Every name above, for listings and the uniqueness test.
    public static let all: [String] = [
        clients, bearerTokens, users, wallets, walletsByUser, registrations, cards, cardsByUser, cardsByFingerprint,
        vault, profilingAttempts, idempotency, payIns, validations, refunds, transactionsByCard, refundsByPayIn,
        challengesAwaiting, profilingAssessments, riskAttempts, riskFailures, riskSuccesses, checkoutRegistrations,
        checkoutMerchants, checkoutSessions, checkoutTransactions, checkoutWallets, checkoutPairingTransactions,
        checkoutPairings, checkoutAudit, checkoutShoppers, events, eventOutbox,
        recurringRegistrations, transactionsByUser, transactionsByWallet, cardErasures,
        preauthorizations, depositPreauthorizations, holdsExpiring, webPayIns, hooks, hooksByEvent, hookSecrets,
        hookFailures, registrationDeadlines, sweeperState, idempotencyDeadlines, bearerTokenDeadlines,
        scaEnrollments, bankAccounts, bankAccountsByUser, payOuts, clientWallets, kycDocuments, kycDocumentsByUser,
    ]
}
