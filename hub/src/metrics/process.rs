//! The standard `process_*` series Prometheus' own clients export (CPU time, memory, open files,
//! threads, start time), read from `/proc/self` at each scrape. Linux only: elsewhere the series
//! are absent. `prometheus-client` has no such collector, so these few lines read the files.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks per second of `/proc/<pid>/stat`'s times (USER_HZ: 100 on every Linux build).
const USER_HZ: f64 = 100.0;

#[derive(Debug, Default)]
pub struct ProcessCollector;

/// What `/proc/self` says, or None when a file cannot be read (not Linux).
#[derive(Debug, PartialEq)]
pub struct Sample {
    pub cpu_seconds: f64,
    pub start_time_seconds: f64,
    pub resident_bytes: f64,
    pub virtual_bytes: f64,
    pub threads: f64,
    pub open_fds: f64,
    pub max_fds: Option<f64>,
}

/// The fields of `/proc/self/stat` after the command name (which may hold spaces or parentheses).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let after = stat.rsplit_once(')')?.1;
    Some(after.split_whitespace().collect())
}

pub fn sample() -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields counted from `state` (field 3 of the whole line) at index 0.
    let f = stat_fields(&stat)?;
    let num = |i: usize| f.get(i)?.parse::<f64>().ok();
    let (utime, stime, threads, starttime, vsize) = (num(11)?, num(12)?, num(17)?, num(19)?, num(20)?);
    // In kB from `status`: no page size to know.
    let rss_kb = std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })?;
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| {
            l.strip_prefix("btime ")
                .and_then(|v| v.trim().parse::<f64>().ok())
        })?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as f64;
    let max_fds = std::fs::read_to_string("/proc/self/limits").ok().and_then(|l| {
        l.lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse().ok())
    });
    Some(Sample {
        cpu_seconds: (utime + stime) / USER_HZ,
        start_time_seconds: boot + starttime / USER_HZ,
        resident_bytes: rss_kb * 1024.0,
        virtual_bytes: vsize,
        threads,
        open_fds,
        max_fds,
    })
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(s) = sample() else { return Ok(()) };
        let cpu = ConstCounter::new(s.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        let mut gauge = |name: &str, help: &str, v: f64| -> Result<(), std::fmt::Error> {
            let g = ConstGauge::new(v);
            g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
        };
        gauge(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch in seconds",
            s.start_time_seconds,
        )?;
        gauge(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            s.resident_bytes,
        )?;
        gauge(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            s.virtual_bytes,
        )?;
        gauge(
            "process_threads",
            "Number of OS threads in the process",
            s.threads,
        )?;
        gauge("process_open_fds", "Number of open file descriptors", s.open_fds)?;
        if let Some(m) = s.max_fds {
            gauge("process_max_fds", "Maximum number of open file descriptors", m)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_name_may_hold_spaces_and_parentheses() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 1234 1000000 300";
        let f = stat_fields(line).unwrap();
        assert_eq!(
            (f[0], f[11], f[12], f[17], f[19], f[20], f[21]),
            ("S", "250", "50", "7", "1234", "1000000", "300")
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read() {
        let s = sample().expect("/proc/self");
        assert!(
            s.threads >= 1.0 && s.open_fds >= 3.0 && s.resident_bytes > 0.0,
            "{s:?}"
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            s.start_time_seconds <= now + 1.0 && s.start_time_seconds > now - 86_400.0 * 365.0,
            "{s:?}"
        );
    }
}
