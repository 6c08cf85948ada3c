//! The schema brought to this engine's version, one migration step at a time.

use quota_core::StoreError;

use super::bridge::{query, SqlStore};
use super::schema;
use crate::sql_json::{Cell, Params};

impl SqlStore {
    fn schema_version(&self) -> Result<u32, StoreError> {
        let found = query(schema::of(self.d).read_version, Params::new())?;
        found
            .first()
            .and_then(|r| r.first())
            .and_then(Cell::as_int)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| StoreError("the database did not report its schema version".into()))
    }

    /// Brings the database to the current schema; returns (version before, version now).
    pub fn migrate(&mut self) -> Result<(u32, u32), StoreError> {
        let schema = schema::of(self.d);
        let version = self.schema_version()?;
        // Step by step: each migration brings the database to a later version, recorded by its
        // last statement, until the current one.
        let mut at = version;
        while at != schema.current_version {
            let steps = schema.migrations.iter().find(|(from, _)| *from == at);
            let (_, steps) = steps.ok_or_else(|| {
                StoreError(format!(
                    "the database has schema version {at}, which this engine (schema {}) does not \
                     know: it was written by a newer release",
                    schema.current_version
                ))
            })?;
            for step in *steps {
                // The versions in the error: what an operator needs to know what the file is.
                query(step, Params::new()).map_err(|e| {
                    StoreError(format!(
                        "the database has schema version {version}, this engine writes version {}; \
                         migrating it failed at version {at}: {}",
                        schema.current_version, e.0
                    ))
                })?;
            }
            let now = self.schema_version()?;
            if now == at {
                return Err(StoreError(format!(
                    "the migration from schema version {at} did not change the version"
                )));
            }
            at = now;
        }
        Ok((version, schema.current_version))
    }
}
