//! The boundary around third-party readers: a panic inside one (polars' JSON reader has panicked on real
//! logs) becomes an error of the input being read, never a crash of mfu.
//!
//! mfu's own code is written not to panic on any input; this is the last resort for code it does not own.
//! While a guarded call runs, the process's panic hook stays quiet (the panic's message goes into the
//! error instead of onto stderr as a backtrace); outside guarded calls the hook is the standard one.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

/// Guarded calls running now, on any thread (a reader's panic may surface on one of its worker threads).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static HOOK: Once = Once::new();

/// Runs `read`, turning a panic inside it into `Err` with the panic's message.
pub fn catch_panic<T>(read: impl FnOnce() -> T) -> Result<T, String> {
    HOOK.call_once(|| {
        let standard = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if ACTIVE.load(Ordering::SeqCst) == 0 {
                standard(info);
            }
        }));
    });
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    // The reader's state is dropped with the panic; nothing of it is used afterwards.
    let result = panic::catch_unwind(AssertUnwindSafe(read));
    ACTIVE.fetch_sub(1, Ordering::SeqCst);
    result.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        format!("the reader failed on this input ({message})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_and_values_pass_through() {
        assert_eq!(catch_panic(|| 7), Ok(7));
        let err =
            catch_panic(|| -> u8 { panic!("index out of bounds: the len is 3") }).unwrap_err();
        assert_eq!(
            err,
            "the reader failed on this input (index out of bounds: the len is 3)"
        );
        let code = 42;
        let err = catch_panic(|| -> u8 { panic!("code {code}") }).unwrap_err();
        assert!(err.ends_with("(code 42)"), "{err}");
    }
}
