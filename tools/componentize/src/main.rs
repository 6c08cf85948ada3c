//! `componentize IN.wasm OUT.wasm`: turns the core module built for `wasm32-unknown-unknown` (which
//! carries its WIT world in a custom section written by wit-bindgen) into a component, and refuses
//! one that imports anything but the engine's own interfaces (`quota:engine/sql`, the SQL bridge).

use std::process::ExitCode;

fn run(input: &str, output: &str) -> Result<String, String> {
    let module = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .map_err(|e| format!("{input}: {e:#}"))?
        .validate(true)
        .encode()
        .map_err(|e| format!("{input}: {e:#}"))?;
    let decoded = wit_component::decode(&component).map_err(|e| format!("decoding the component: {e:#}"))?;
    let wit_component::DecodedWasm::Component(resolve, world_id) = decoded else {
        return Err("the encoder did not produce a component".into());
    };
    let world = &resolve.worlds[world_id];
    let imports: Vec<String> = world.imports.keys().map(|k| resolve.name_world_key(k)).collect();
    if let Some(bad) = imports.iter().find(|i| !i.starts_with("quota:engine/")) {
        return Err(format!(
            "the component imports `{bad}`; only quota:engine interfaces are allowed"
        ));
    }
    // The same bytes leave the file (and its time) as it is: quota-hub embeds it, and cargo
    // rebuilds what embeds a file whose time changed (a release build: minutes on 2 cores).
    let same = std::fs::read(output).is_ok_and(|old| old == component);
    if !same {
        std::fs::write(output, &component).map_err(|e| format!("{output}: {e}"))?;
    }
    Ok(format!(
        "{output}: {} bytes, imports {}{}",
        component.len(),
        imports.join(", "),
        if same { " (unchanged)" } else { "" }
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: componentize IN.wasm OUT.wasm");
        return ExitCode::from(2);
    };
    match run(input, output) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("componentize: {e}");
            ExitCode::FAILURE
        }
    }
}
