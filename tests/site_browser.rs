//! The example game's public site in a real browser: headless Chromium opens every page from
//! `file://`, each must load without a console message (the pages have no scripts, so any message
//! is an error: a refused or missing resource, a parse problem), each step page must have its
//! picture element (and the picture, once the game draws the board), and screenshots are saved
//! under `target/tmp/site-browser/`. Without Chromium the test is skipped with a message, except
//! under CI (`CI` set, as `.ci/run` runs), where that is a failure: `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXAMPLE: &str = "turns/demo-gettysburg-campaign-18630701";
const GAME: &str = "demo-gettysburg-campaign-18630701";

/// Chromium on the PATH (or `PBEM_CHROMIUM`).
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PBEM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Runs Chromium headless with `args` on `url`, killed after two minutes; (stdout, stderr).
fn run_chromium(bin: &Path, profile: &Path, args: &[String], url: &str) -> (String, String) {
    let mut child = Command::new(bin)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .env("DBUS_SESSION_BUS_ADDRESS", "disabled:")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish {url} within two minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The console messages and load failures Chromium logged.
fn problems(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Not allowed to load local resource") || l.contains("net::ERR_"))
        .collect()
}

#[test]
fn every_page_of_the_example_site_opens_in_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is not installed, and CI must run this test (.ci/run installs Debian's chromium)");
        }
        eprintln!("skipped: no chromium on the PATH (apt-get install chromium, or set PBEM_CHROMIUM); CI runs it");
        return;
    };
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("site-browser");
    let _ = std::fs::remove_dir_all(&base);
    let site = base.join("site");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE);
    let st = Command::new(env!("CARGO_BIN_EXE_pbem")).arg("publish").arg(&example).arg("--out").arg(&site).stdout(Stdio::null()).status().unwrap();
    assert!(st.success(), "pbem publish failed");
    let game = pbem::games::by_rules("gettysburg-campaign").unwrap();
    let mut pages: Vec<PathBuf> = vec![site.join("index.html"), site.join(GAME).join("index.html")];
    let steps = (0..).take_while(|n| site.join(GAME).join(format!("step-{n}.html")).is_file()).count();
    let records = (0..).take_while(|n| example.join(format!("records/{n:06}.json")).is_file()).count();
    assert_eq!(steps, records, "a page per record");
    pages.extend((0..steps).map(|n| site.join(GAME).join(format!("step-{n}.html"))));

    // Three browsers at a time, each with its own profile.
    let chunks: Vec<Vec<(usize, PathBuf)>> = pages.iter().cloned().enumerate().collect::<Vec<_>>().chunks(pages.len().div_ceil(3)).map(<[_]>::to_vec).collect();
    let results: Vec<(PathBuf, String, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let (bin, base) = (&bin, &base);
                s.spawn(move || {
                    chunk.into_iter().map(|(i, p)| {
                        let (dom, err) = run_chromium(bin, &base.join(format!("profile-{i}")), &["--dump-dom".into()], &format!("file://{}", p.display()));
                        (p, dom, err)
                    }).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    for (page, dom, err) in &results {
        assert!(dom.contains("<h1>"), "{}: did not load (DOM: {dom:.300}); chromium said: {err:.2000}", page.display());
        let bad = problems(err);
        assert!(bad.is_empty(), "{}: console errors: {bad:#?}", page.display());
        let name = page.file_name().unwrap().to_string_lossy();
        if let Some(n) = name.strip_prefix("step-").and_then(|r| r.strip_suffix(".html")) {
            assert!(dom.contains("id=\"picture\""), "{}: no picture element", page.display());
            let state = std::fs::read_to_string(example.join(format!("states/{:06}.json", n.parse::<u64>().unwrap()))).unwrap();
            if game.picture(&state, None, false).unwrap().is_some() {
                assert!(dom.contains(&format!("<img src=\"step-{n}.svg\"")), "{}: the game draws this board, the page must show it", page.display());
            }
        }
    }

    // Screenshots a person can look at: the game's page and a step page.
    for (shot, page) in [("game.png", site.join(GAME).join("index.html")), ("step-1.png", site.join(GAME).join("step-1.html"))] {
        let png = base.join(shot);
        let (_, err) = run_chromium(&bin, &base.join("profile-shot"), &[format!("--screenshot={}", png.display()), "--window-size=1200,1600".into(), "--hide-scrollbars".into()], &format!("file://{}", page.display()));
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot {} ({e}); chromium said: {err:.2000}", png.display()));
        assert!(bytes.starts_with(b"\x89PNG"), "{} is not a PNG", png.display());
        assert!(problems(&err).is_empty(), "{}: {:#?}", page.display(), problems(&err));
        eprintln!("screenshot: {}", png.display());
    }
}
