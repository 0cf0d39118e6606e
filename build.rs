//! Embeds `templates/` into the binary so reports render anywhere.
fn main() {
    minijinja_embed::embed_templates!("templates", &[".txt", ".html", ".css"][..]);
}
