//! The schema brought to this engine's version, one migration step at a time; a newer release's
//! schema written as it is when its floor allows this engine (see `schema::Schema`).

use quota_core::StoreError;

use super::bridge::{query, SqlStore};
use super::schema;
use crate::sql_json::{Cell, Params};

/// Where an operator goes back from a schema this engine may not write (docs/upgrade.md).
const RESTORE_HINT: &str = "run the newer release again, or restore the backup taken before the \
     upgrade (`quota-hub restore --db <url> --input <backup>`, or `jupyterhub-quota restore <backup>` \
     in a hub; docs/upgrade.md, Rollback)";

/// A database's schema as this engine reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Found {
    version: u32,
    floor: u32,
}

impl SqlStore {
    fn schema_int(&self, sql: &'static str) -> Result<u32, StoreError> {
        let found = query(sql, Params::new())?;
        found
            .first()
            .and_then(|r| r.first())
            .and_then(Cell::as_int)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| StoreError("the database did not report its schema version".into()))
    }

    fn schema_found(&self) -> Result<Found, StoreError> {
        let schema = schema::of(self.d);
        let floor = self.schema_int(schema.read_version)?;
        let recorded = if self.schema_int(schema.has_versions)? == 1 {
            self.schema_int(schema.read_versions)?
        } else {
            0
        };
        // Before schema 10 the floor's place held the version.
        Ok(Found {
            version: recorded.max(floor),
            floor,
        })
    }

    /// Brings the database to the current schema; returns (version before, version now). A
    /// database at a newer release's schema is left as it is, (version, version), when its floor
    /// is at most this engine's schema, and refused otherwise.
    pub fn migrate(&mut self) -> Result<(u32, u32), StoreError> {
        let schema = schema::of(self.d);
        if let Some(first) = schema.migration_begins {
            query(first, Params::new())?;
        }
        let found = self.schema_found()?;
        let current = schema.current_version;
        if found.version > current {
            if found.floor <= current {
                return Ok((found.version, found.version));
            }
            return Err(StoreError(format!(
                "the database has schema version {}, written by a newer release that lets engines \
                 of schema {} or newer write it; this engine writes schema {current}, so it may \
                 not: {RESTORE_HINT}",
                found.version, found.floor
            )));
        }
        // Step by step: each migration brings the database to a later version, recorded by its
        // last statement, until the current one.
        let version = found.version;
        let mut at = version;
        while at != current {
            let steps = schema.migrations.iter().find(|(from, _)| *from == at);
            let (_, steps) = steps.ok_or_else(|| {
                StoreError(format!(
                    "the database has schema version {at}, which this engine (schema {current}) \
                     does not know"
                ))
            })?;
            for step in *steps {
                // The versions in the error: what an operator needs to know what the file is.
                query(step, Params::new()).map_err(|e| {
                    StoreError(format!(
                        "the database has schema version {version}, this engine writes version \
                         {current}; migrating it failed at version {at}: {}",
                        e.0
                    ))
                })?;
            }
            let now = self.schema_found()?.version;
            if now == at {
                return Err(StoreError(format!(
                    "the migration from schema version {at} did not change the version"
                )));
            }
            at = now;
        }
        Ok((version, current))
    }
}
