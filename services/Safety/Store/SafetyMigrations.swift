import Foundation
import GRDB
import HearthCore
import HearthStore

enum SafetyMigrations {
    /// The daily reminder now comes before any contact: a switch with reminders on and nothing
    /// scheduled (one without contacts had nothing to wake it) is looked at at its next reminder
    /// time (today's if still ahead, never at once), or at the end of its pause; the decider
    /// then decides as for any switch.
    static func scheduleReminders(at now: Date, in db: Database) throws {
        let waiting = try Row.fetchAll(
            db,
            sql: """
                SELECT user_id, time_zone, reminder_hour, reminder_minute, paused_until FROM profile
                WHERE reminder_enabled AND is_active AND next_due_at IS NULL
                """
        )
        for row in waiting {
            let zone = TimeZone(iana: row["time_zone"]) ?? .gmt
            let pausedUntil = (row["paused_until"] as StoredDate?)?.date
            let rule = DailyReminderRule(hour: row["reminder_hour"], minute: row["reminder_minute"], zone: zone)
            let next = rule.next(at: now) { date in
                date == LocalDate(now, in: zone) && date.instant(hour: rule.hour, minute: rule.minute, in: zone) <= now
            }
            let wake = pausedUntil.map { $0 > now ? $0 : next.time } ?? next.time
            try db.execute(
                sql: "UPDATE profile SET next_due_at = ? WHERE user_id = ?",
                arguments: [StoredDate(wake), row["user_id"] as String]
            )
        }
    }

    /// Named and append-only: a shipped migration is never edited. `keys` seal what earlier
    /// versions kept in clear; `now` is the store clock's time (v8 and v10 date from it).
    static func migrator(keys: DataKeys, now: Date = Date()) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: profiles, contacts, heartbeats, alerts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE profile (
                        user_id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        email TEXT NOT NULL,
                        threshold_hours INTEGER NOT NULL,
                        language TEXT NOT NULL,
                        time_zone TEXT NOT NULL,
                        reminder_enabled BOOLEAN NOT NULL,
                        reminder_hour INTEGER NOT NULL,
                        reminder_minute INTEGER NOT NULL,
                        push_token TEXT NOT NULL,
                        count_activity BOOLEAN NOT NULL,
                        period_start DATETIME NOT NULL,
                        last_check_in_at DATETIME,
                        snoozes INTEGER NOT NULL,
                        paused_until DATETIME,
                        epoch INTEGER NOT NULL,
                        check_in_epoch INTEGER NOT NULL,
                        next_due_at DATETIME,
                        created_at DATETIME NOT NULL,
                        updated_at DATETIME NOT NULL
                    );
                    CREATE INDEX profile_due ON profile(next_due_at) WHERE next_due_at IS NOT NULL;

                    CREATE TABLE contact (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE,
                        email TEXT NOT NULL,
                        email_key TEXT NOT NULL,
                        name TEXT NOT NULL,
                        created_at DATETIME NOT NULL,
                        UNIQUE (user_id, email_key)
                    );

                    CREATE TABLE heartbeat (
                        user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE,
                        at DATETIME NOT NULL,
                        time_zone TEXT NOT NULL,
                        device_info TEXT NOT NULL,
                        source TEXT NOT NULL,
                        request_id TEXT NOT NULL,
                        PRIMARY KEY (user_id, request_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX heartbeat_time ON heartbeat(user_id, at);

                    CREATE TABLE alert (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE,
                        epoch INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        channel TEXT NOT NULL,
                        contact_id TEXT NOT NULL,
                        address TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        body TEXT NOT NULL,
                        state TEXT NOT NULL,
                        attempts INTEGER NOT NULL,
                        last_error TEXT NOT NULL,
                        next_attempt_at DATETIME,
                        sent_at DATETIME,
                        created_at DATETIME NOT NULL
                    );
                    CREATE UNIQUE INDEX alert_once ON alert(user_id, epoch, kind, contact_id) WHERE kind != 'test';
                    CREATE INDEX alert_due ON alert(next_attempt_at) WHERE state = 'pending';
                    CREATE INDEX alert_user ON alert(user_id, epoch);
                    """
            )
        }
        migrator.registerMigration("v2: attempts claimed before they begin") { db in
            // An alert tried before this version may have arrived (the rule of that version).
            try db.execute(
                sql: """
                    ALTER TABLE alert ADD COLUMN claimed_at DATETIME;
                    ALTER TABLE alert ADD COLUMN may_have_arrived BOOLEAN NOT NULL DEFAULT 0;
                    UPDATE alert SET may_have_arrived = 1 WHERE attempts > 0 AND state IN ('pending', 'cancelled');
                    DROP INDEX alert_due;
                    CREATE INDEX alert_due ON alert(channel, next_attempt_at) WHERE state = 'pending';
                    CREATE INDEX alert_claimed ON alert(claimed_at) WHERE claimed_at IS NOT NULL;
                    """
            )
        }
        migrator.registerMigration("v3: check-ins kept without counting") { db in
            // A check-in merged into the one before it, or over the rate limit, is kept too (not
            // counted), so that a retry of it is known however late it comes. The rate limit's
            // read of the last hour tells them apart from the index alone.
            try db.execute(
                sql: """
                    ALTER TABLE heartbeat ADD COLUMN counted BOOLEAN NOT NULL DEFAULT 1;
                    DROP INDEX heartbeat_time;
                    CREATE INDEX heartbeat_time ON heartbeat(user_id, at, counted);
                    """
            )
        }
        migrator.registerMigration("v4: the app's request ids apart from forwarded ones") { db in
            // Kept as the client sent them until now, an app's id could be a forwarded one
            // (`tasks:e1`) and make that activity a repeat, or the other way round. Ids are now
            // kept by source (`SafetyRules.HeartbeatID`); the app's move under `app:`. A row
            // whose new id is taken already (the app sent both `x` and `app:x` in the last 30
            // days) stays as it is: only a very late retry of it would count once more. The
            // server's own ids for check-ins sent without one (`server:UUID`, source `app` too)
            // move as well: a client could have sent one that looked the same.
            try db.execute(sql: "UPDATE OR IGNORE heartbeat SET request_id = 'app:' || request_id WHERE source = 'app'")
        }
        migrator.registerMigration("v5: snoozes in a row counted apart from the period's") { db in
            // A pause's end begins a period without snoozes (its deadline counts from there), and
            // the limit of three in a row used to start over with it: a pause and a resume gave
            // three more. The run now ends only at a check-in.
            try db.execute(
                sql: """
                    ALTER TABLE profile ADD COLUMN snoozes_in_a_row INTEGER NOT NULL DEFAULT 0;
                    UPDATE profile SET snoozes_in_a_row = snoozes;
                    """
            )
        }
        migrator.registerMigration("v6: contacts agree first") { db in
            // A contact is invited and receives alarms only once they confirm. Contacts stored
            // before are invited when the service next starts (invitations_sent = 0 marks them;
            // `SafetyStore.inviteContactsStoredBefore`), and receive alarms while that first
            // invitation is open (README). What a user's contacts at an address did (the
            // invitations sent, a refusal) and the user's invitations of the last day are kept
            // apart from the profile and its contacts, so that neither removing a contact nor
            // deleting the account resets them; so are the links' tokens (their SHA-256), so that
            // a contact removed can still decline or opt out from the links they hold.
            // Invitations may be re-sent within an epoch.
            try db.execute(
                sql: """
                    ALTER TABLE contact ADD COLUMN state TEXT NOT NULL DEFAULT 'invited';
                    ALTER TABLE contact ADD COLUMN invited_at DATETIME;
                    ALTER TABLE contact ADD COLUMN invitation_expires_at DATETIME;
                    ALTER TABLE contact ADD COLUMN invitations_sent INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE contact ADD COLUMN answered_at DATETIME;
                    ALTER TABLE contact ADD COLUMN alarms_until DATETIME;

                    CREATE TABLE contact_address (
                        user_id TEXT NOT NULL,
                        address_key TEXT NOT NULL,
                        invitations INTEGER NOT NULL,
                        refused TEXT,
                        last_invited_at DATETIME,
                        PRIMARY KEY (user_id, address_key)
                    ) WITHOUT ROWID;

                    CREATE TABLE invitation_sent (
                        user_id TEXT NOT NULL,
                        at DATETIME NOT NULL
                    );
                    CREATE INDEX invitation_sent_user ON invitation_sent(user_id, at);

                    CREATE TABLE contact_token (
                        hash BLOB PRIMARY KEY NOT NULL,
                        contact_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        address_key TEXT NOT NULL,
                        purpose TEXT NOT NULL,
                        expires_at DATETIME,
                        created_at DATETIME NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX contact_token_created ON contact_token(created_at);

                    DROP INDEX alert_once;
                    CREATE UNIQUE INDEX alert_once ON alert(user_id, epoch, kind, contact_id)
                        WHERE kind NOT IN ('test', 'invitation');
                    """
            )
        }
        migrator.registerMigration("v7: personal data sealed") { db in
            // Names and addresses are sealed (``SealedField``); addresses are compared by their
            // keyed hash; a message keeps its address and words only while pending, and an
            // email to a contact keeps the hash of its address for the all-clear. `data_key`
            // records which index key the hashes were made with, and whether values were in
            // clear before (the store then rebuilds its file once: ``SafetyStore/checkKeys()``).
            try db.execute(
                sql: """
                    ALTER TABLE alert ADD COLUMN address_key TEXT NOT NULL DEFAULT '';
                    CREATE TABLE data_key (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        index_check TEXT NOT NULL,
                        scrub_needed BOOLEAN NOT NULL
                    );
                    """
            )
            try SealingMigration(keys: keys).run(in: db)
        }
        migrator.registerMigration("v8: graces told, spent links and unused addresses pruned") { db in
            // The end of a grace (v6) is told to the user once: the decider finds the next by
            // `alarms_until`, cleared once told (`SafetyStore.endGraces`). Links that can no
            // longer act are pruned by `expires_at`: an invitation's end, or for an opt-out link
            // the end of the 30 days it works after its contact's removal, set at the removal
            // (found by `contact_id`); for contacts removed before, 30 days from now. What an
            // address answered a user is pruned when it holds no refusal, no contact of theirs
            // has it and it was last invited long ago (`SafetyStore.pruneContactAddresses`).
            try db.execute(
                sql: """
                    CREATE INDEX contact_grace ON contact(alarms_until) WHERE alarms_until IS NOT NULL;
                    CREATE INDEX contact_token_contact ON contact_token(contact_id);
                    CREATE INDEX contact_token_expiry ON contact_token(expires_at) WHERE expires_at IS NOT NULL;
                    CREATE INDEX contact_address_unrefused ON contact_address(last_invited_at) WHERE refused IS NULL;
                    """
            )
            try db.execute(
                sql: """
                    UPDATE contact_token SET expires_at = ?
                    WHERE purpose = 'opt_out' AND expires_at IS NULL AND contact_id NOT IN (SELECT id FROM contact)
                    """,
                arguments: [StoredDate(ContactConsent.optOutLinksEnd(removedAt: now))]
            )
        }
        migrator.registerMigration("v9: a profile can be inactive") { db in
            // Every profile stored before was active.
            try db.execute(sql: "ALTER TABLE profile ADD COLUMN is_active BOOLEAN NOT NULL DEFAULT 1")
        }
        migrator.registerMigration("v10: daily reminders before any contact") { db in
            try Self.scheduleReminders(at: now, in: db)
        }
        return migrator
    }
}
