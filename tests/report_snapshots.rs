//! Whole-game snapshot: a demo game with a fixed seed must reproduce its reports byte for byte.
//! Regenerate after an intended change with `INSTA_UPDATE=always cargo test --test report_snapshots`
//! (and regenerate the example game under `turns/`, see ARCHITECTURE.md). The game is one of
//! report wording 3 (`report::WORDING`): a game keeps its wording, so these snapshots stand for
//! every game made before wording 4 and must not change.

use pbem::pipeline;

#[test]
fn gettysburg_demo_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let start = pipeline::parse_time("2026-07-01T12:00:00Z").unwrap();
    let s = pbem::demo::run_with_scenario("gettysburg-campaign", &dir, [0x63; 32], None, Default::default(), start, 3).unwrap();
    insta::assert_snapshot!("gettysburg_summary", format!("steps {}, orders {}\n{}", s.steps, s.orders, s.outcome));
    for n in [0, 1, 2, s.steps] {
        for role in ["confederate", "union"] {
            let text = std::fs::read_to_string(dir.join("reports").join(format!("{n:06}")).join(format!("{role}.txt"))).unwrap();
            let name = if n == s.steps { format!("gettysburg_last_{role}") } else { format!("gettysburg_{n}_{role}") };
            insta::assert_snapshot!(name, text);
        }
    }
}
