//! Webhook delivery metrics: sends by outcome, the next event's failed attempts, and how old an
//! event is when its receiver takes it.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    webhook: String,
    outcome: &'static str,
}

pub struct Deliveries {
    sends: Family<OutcomeLabels, Counter>,
    retrying: Family<WebhookLabels, Gauge>,
    latency: Family<WebhookLabels, Histogram>,
    pending: Family<WebhookLabels, Gauge>,
    failed: Family<WebhookLabels, Gauge>,
}

fn latency_histogram() -> Histogram {
    // 0.25 s .. ~2.3 h.
    Histogram::new(exponential_buckets(0.25, 2.0, 16))
}

impl Deliveries {
    pub fn new(r: &mut Registry) -> Deliveries {
        let d = Deliveries {
            sends: Family::default(),
            retrying: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            pending: Family::default(),
            failed: Family::default(),
        };
        r.register(
            "quota_webhook_pending",
            "Events each webhook is still to be sent (read from the database at scrape time)",
            d.pending.clone(),
        );
        r.register(
            "quota_webhook_failed_deliveries",
            "Deliveries that failed for good after 24 hours of retries, of events still kept (read at scrape time)",
            d.failed.clone(),
        );
        r.register(
            "quota_webhook_sends",
            "Webhook POSTs by webhook and outcome (delivered: a 2xx within 10 s; failed: anything else, retried)",
            d.sends.clone(),
        );
        r.register(
            "quota_webhook_failed_attempts",
            "Failed attempts of each webhook's next event (0: delivering normally)",
            d.retrying.clone(),
        );
        r.register(
            "quota_webhook_delivery_latency_seconds",
            "From an event's writing to its receiver's 2xx, by webhook",
            d.latency.clone(),
        );
        d
    }

    pub fn delivered(&self, webhook: &str, age_seconds: f64) {
        self.sends
            .get_or_create(&OutcomeLabels {
                webhook: webhook.to_string(),
                outcome: "delivered",
            })
            .inc();
        self.latency
            .get_or_create(&WebhookLabels {
                webhook: webhook.to_string(),
            })
            .observe(age_seconds);
    }

    /// Each webhook's (name, pending, failed) as read just now.
    pub fn set_state(&self, webhooks: &[(String, i64, i64)]) {
        self.pending.clear();
        self.failed.clear();
        for (name, pending, failed) in webhooks {
            let l = WebhookLabels {
                webhook: name.clone(),
            };
            self.pending.get_or_create(&l).set(*pending);
            self.failed.get_or_create(&l).set(*failed);
        }
    }

    pub fn failed(&self, webhook: &str) {
        self.sends
            .get_or_create(&OutcomeLabels {
                webhook: webhook.to_string(),
                outcome: "failed",
            })
            .inc();
    }

    pub fn attempts_left(&self, webhook: &str, attempts: i64) {
        self.retrying
            .get_or_create(&WebhookLabels {
                webhook: webhook.to_string(),
            })
            .set(attempts);
    }
}
