import HearthPostgres

/// The safety store's schema on PostgreSQL: the tables of the SQLite store as its migrations
/// leave them (v1-v10), in PostgreSQL's types. Dates are `timestamptz` to the millisecond
/// (``PostgresTime``); sealed values `bytea`. Named and append-only, as the SQLite store's.
enum PostgresSafetySchema {
    /// The advisory lock the migrations hold (replicas starting together migrate once).
    static let migrationLock: Int64 = 7_103_001

    static let migrations = [
        PostgresMigration(
            "v1: the safety store as SQLite's v10 leaves it",
            [
                """
                CREATE TABLE profile (
                    user_id TEXT PRIMARY KEY,
                    name BYTEA NOT NULL,
                    email BYTEA NOT NULL,
                    threshold_hours BIGINT NOT NULL,
                    language TEXT NOT NULL,
                    time_zone TEXT NOT NULL,
                    reminder_enabled BOOLEAN NOT NULL,
                    reminder_hour BIGINT NOT NULL,
                    reminder_minute BIGINT NOT NULL,
                    push_token TEXT NOT NULL,
                    count_activity BOOLEAN NOT NULL,
                    period_start TIMESTAMPTZ NOT NULL,
                    last_check_in_at TIMESTAMPTZ,
                    snoozes BIGINT NOT NULL,
                    paused_until TIMESTAMPTZ,
                    epoch BIGINT NOT NULL,
                    check_in_epoch BIGINT NOT NULL,
                    next_due_at TIMESTAMPTZ,
                    created_at TIMESTAMPTZ NOT NULL,
                    updated_at TIMESTAMPTZ NOT NULL,
                    snoozes_in_a_row BIGINT NOT NULL,
                    is_active BOOLEAN NOT NULL)
                """,
                "CREATE INDEX profile_due ON profile (next_due_at) WHERE next_due_at IS NOT NULL",
                """
                CREATE TABLE contact (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES profile (user_id) ON DELETE CASCADE,
                    email BYTEA NOT NULL,
                    email_key TEXT NOT NULL,
                    name BYTEA NOT NULL,
                    created_at TIMESTAMPTZ NOT NULL,
                    state TEXT NOT NULL,
                    invited_at TIMESTAMPTZ,
                    invitation_expires_at TIMESTAMPTZ,
                    invitations_sent BIGINT NOT NULL,
                    answered_at TIMESTAMPTZ,
                    alarms_until TIMESTAMPTZ,
                    UNIQUE (user_id, email_key))
                """,
                "CREATE INDEX contact_grace ON contact (alarms_until) WHERE alarms_until IS NOT NULL",
                """
                CREATE TABLE heartbeat (
                    user_id TEXT NOT NULL REFERENCES profile (user_id) ON DELETE CASCADE,
                    at TIMESTAMPTZ NOT NULL,
                    time_zone TEXT NOT NULL,
                    device_info TEXT NOT NULL,
                    source TEXT NOT NULL,
                    request_id TEXT NOT NULL,
                    counted BOOLEAN NOT NULL,
                    PRIMARY KEY (user_id, request_id))
                """,
                "CREATE INDEX heartbeat_time ON heartbeat (user_id, at, counted)",
                """
                CREATE TABLE alert (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES profile (user_id) ON DELETE CASCADE,
                    epoch BIGINT NOT NULL,
                    kind TEXT NOT NULL,
                    channel TEXT NOT NULL,
                    contact_id TEXT NOT NULL,
                    address BYTEA NOT NULL,
                    address_key TEXT NOT NULL,
                    subject BYTEA NOT NULL,
                    body BYTEA NOT NULL,
                    state TEXT NOT NULL,
                    attempts BIGINT NOT NULL,
                    last_error TEXT NOT NULL,
                    next_attempt_at TIMESTAMPTZ,
                    sent_at TIMESTAMPTZ,
                    created_at TIMESTAMPTZ NOT NULL,
                    claimed_at TIMESTAMPTZ,
                    may_have_arrived BOOLEAN NOT NULL)
                """,
                """
                CREATE UNIQUE INDEX alert_once ON alert (user_id, epoch, kind, contact_id)
                    WHERE kind NOT IN ('test', 'invitation')
                """,
                "CREATE INDEX alert_due ON alert (channel, next_attempt_at) WHERE state = 'pending'",
                "CREATE INDEX alert_claimed ON alert (claimed_at) WHERE claimed_at IS NOT NULL",
                "CREATE INDEX alert_user ON alert (user_id, epoch)",
                """
                CREATE TABLE contact_address (
                    user_id TEXT NOT NULL,
                    address_key TEXT NOT NULL,
                    invitations BIGINT NOT NULL,
                    refused TEXT,
                    last_invited_at TIMESTAMPTZ,
                    PRIMARY KEY (user_id, address_key))
                """,
                "CREATE INDEX contact_address_unrefused ON contact_address (last_invited_at) WHERE refused IS NULL",
                "CREATE TABLE invitation_sent (user_id TEXT NOT NULL, at TIMESTAMPTZ NOT NULL)",
                "CREATE INDEX invitation_sent_user ON invitation_sent (user_id, at)",
                """
                CREATE TABLE contact_token (
                    hash BYTEA PRIMARY KEY,
                    contact_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    address_key TEXT NOT NULL,
                    purpose TEXT NOT NULL,
                    expires_at TIMESTAMPTZ,
                    created_at TIMESTAMPTZ NOT NULL)
                """,
                "CREATE INDEX contact_token_created ON contact_token (created_at)",
                "CREATE INDEX contact_token_contact ON contact_token (contact_id)",
                "CREATE INDEX contact_token_expiry ON contact_token (expires_at) WHERE expires_at IS NOT NULL",
                "CREATE TABLE data_key (id INTEGER PRIMARY KEY CHECK (id = 1), index_check TEXT NOT NULL)",
            ]
        ),
        PostgresMigration(
            "v2: a claim's lease, renewed whatever its message's state",
            [
                // Until then a claim is held by its process (renewed while the send lasts); a
                // claim without one (copied from a SQLite file, or made before this migration)
                // holds for one lease from its claim. Upgrade every replica together: one before
                // it neither renews this nor checks which claim an outcome answers.
                "ALTER TABLE alert ADD COLUMN lease_until TIMESTAMPTZ"
            ]
        ),
        PostgresMigration(
            "v3: claims a check-in cancelled, indexed apart from the sends under way",
            [
                // Every claim looks for these (cancelled while under way, their lease run out):
                // the index of all claims made it read every send under way (0.8 ms a claim at
                // 1,500 alarms a second). Only those are indexed now; a claim writes no index
                // entry.
                "DROP INDEX alert_claimed",
                "CREATE INDEX alert_claim_ended ON alert (claimed_at) WHERE claimed_at IS NOT NULL AND state <> 'pending'",
            ]
        ),
    ]
}
