//! Writes each fuzz target's seeds (`quota_scenarios::fuzz_seeds::seeds`) into `corpus/<target>/`.
//! Usage: make-seeds <corpus dir>

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    for target in quota_scenarios::surfaces::targets {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).expect("the corpus directory can be created");
        let seeds = quota_scenarios::fuzz_seeds::seeds(target);
        for (name, data) in &seeds {
            std::fs::write(d.join(format!("seed-{name}")), data).expect("a seed can be written");
        }
        println!("{target}: {} seeds", seeds.len());
    }
}
