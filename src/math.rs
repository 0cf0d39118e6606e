//! The C math functions pbem's code and its dependencies call (resvg's and usvg's geometry, std's
//! `f64::powf`, `f32::cos`, a float's `%`), defined here from the pure-Rust `libm` crate (a port of
//! musl's) so that the linker takes them from pbem and not from the system's `libm.so`.
//!
//! Two reasons. Determinism: a picture must be byte-identical on every machine, and the system's
//! libm may round a last bit differently from one glibc (or musl, or macOS) to another; these are
//! the same code everywhere. Start-up: without them the loader maps `libm.so.6` and binds its
//! symbols at every run (issue 11, process start: ~0.15 ms of ~1.2). The set is C99's functions
//! a Rust float method can call, in both widths, and GNU's `sincos`, which LLVM makes of a `sin`
//! and a `cos` of the same value; a test checks that the binary loads no `libm.so`.

/// Defines each C function `NAME(ARGS) -> T` as the `libm` crate's function of the same name.
macro_rules! from_libm {
    ($($name:ident($($arg:ident),+) -> $t:ty;)+) => {$(
        #[doc = concat!("`", stringify!($name), "(3)`, from the `libm` crate.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: $t),+) -> $t {
            libm::$name($($arg),+)
        }
    )+};
}

from_libm! {
    sin(x) -> f64; sinf(x) -> f32; cos(x) -> f64; cosf(x) -> f32; tan(x) -> f64; tanf(x) -> f32;
    asin(x) -> f64; asinf(x) -> f32; acos(x) -> f64; acosf(x) -> f32; atan(x) -> f64; atanf(x) -> f32;
    atan2(y, x) -> f64; atan2f(y, x) -> f32;
    sinh(x) -> f64; sinhf(x) -> f32; cosh(x) -> f64; coshf(x) -> f32; tanh(x) -> f64; tanhf(x) -> f32;
    exp(x) -> f64; expf(x) -> f32; exp2(x) -> f64; exp2f(x) -> f32; expm1(x) -> f64; expm1f(x) -> f32;
    log(x) -> f64; logf(x) -> f32; log2(x) -> f64; log2f(x) -> f32; log10(x) -> f64; log10f(x) -> f32;
    log1p(x) -> f64; log1pf(x) -> f32;
    pow(x, y) -> f64; powf(x, y) -> f32; cbrt(x) -> f64; cbrtf(x) -> f32;
    hypot(x, y) -> f64; hypotf(x, y) -> f32; fmod(x, y) -> f64; fmodf(x, y) -> f32;
}

/// `sincos(3)` (GNU): both at once, into `s` and `c`.
///
/// # Safety
/// `s` and `c` must be valid for writes, as the C function requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sincos(x: f64, s: *mut f64, c: *mut f64) {
    let (sin, cos) = libm::sincos(x);
    // SAFETY: the caller's pointers, valid for writes (the C contract).
    unsafe {
        *s = sin;
        *c = cos;
    }
}

/// `sincosf(3)` (GNU): both at once, into `s` and `c`.
///
/// # Safety
/// `s` and `c` must be valid for writes, as the C function requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sincosf(x: f32, s: *mut f32, c: *mut f32) {
    let (sin, cos) = libm::sincosf(x);
    // SAFETY: the caller's pointers, valid for writes (the C contract).
    unsafe {
        *s = sin;
        *c = cos;
    }
}
