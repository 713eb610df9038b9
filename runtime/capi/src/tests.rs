use super::*;
use std::ptr::{null, null_mut};

fn create(arch: &std::ffi::CStr) -> *mut WspRt {
    let mut h = null_mut();
    let mut err = [0 as c_char; 128];
    // SAFETY: valid pointers.
    let rc = unsafe { wsp_rt_create(arch.as_ptr(), null(), &mut h, err.as_mut_ptr(), 128) };
    assert_eq!(rc, WSP_RT_OK);
    h
}

fn last_error(h: *mut WspRt) -> String {
    // SAFETY: a live handle's error is a C string.
    unsafe { CStr::from_ptr(wsp_rt_last_error(h)) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn null_pointers_are_refused_and_reported() {
    let mut err = [0 as c_char; 64];
    // SAFETY: the functions check their pointers.
    unsafe {
        assert_eq!(
            wsp_rt_create(null(), null(), null_mut(), err.as_mut_ptr(), 64),
            WSP_RT_ERR_NULL
        );
        let mut h = null_mut();
        assert_eq!(
            wsp_rt_create(null(), null(), &mut h, err.as_mut_ptr(), 64),
            WSP_RT_ERR_NULL
        );
        assert!(h.is_null());
        assert_eq!(wsp_rt_start(null_mut()), WSP_RT_ERR_NULL);
        assert_eq!(
            wsp_rt_submit(null_mut(), null(), null_mut()),
            WSP_RT_ERR_NULL
        );
        assert!(wsp_rt_stats_json(null_mut()).is_null());
        wsp_rt_destroy(null_mut());
    }
    let h = create(c"ascend950");
    // SAFETY: a live handle; the other pointers are checked.
    unsafe {
        let mut id = 0;
        assert_eq!(
            wsp_rt_add_tensor(h, 4, null(), 2, null(), 0, &mut id),
            WSP_RT_ERR_NULL
        );
        assert!(last_error(h).contains("`dims` is a null pointer"));
        assert_eq!(
            wsp_rt_register_kernel(h, c"k".as_ptr(), None, c"cube".as_ptr(), &mut id),
            WSP_RT_ERR_NULL
        );
        wsp_rt_destroy(h);
    }
}

#[test]
fn configuration_comes_before_the_start_and_models_parse_from_toml() {
    let h = create(c"pto_wsp_v9");
    // SAFETY: a live handle.
    unsafe {
        let two = [2u32];
        assert_eq!(
            wsp_rt_set_policy(h, c"round_robin".as_ptr(), two.as_ptr(), 1),
            WSP_RT_OK
        );
        assert_eq!(
            wsp_rt_set_policy(h, c"task_window".as_ptr(), two.as_ptr(), 1),
            WSP_RT_OK
        );
        assert_eq!(
            wsp_rt_set_policy(h, c"fifo".as_ptr(), two.as_ptr(), 1),
            WSP_RT_ERR_ARG
        );
        assert_eq!(wsp_rt_start(h), WSP_RT_OK);
        let cfg = (*h)
            .rt
            .as_ref()
            .map(|r| r.config().clone())
            .expect("started");
        assert_eq!(cfg.policies.task_window, 2);
        assert_eq!(cfg.deplist_pool, 16);
        assert_eq!(wsp_rt_set_threads(h, 4), WSP_RT_ERR_STATE);
        assert!(last_error(h).contains("configure it before"));
        let json = CStr::from_ptr(wsp_rt_stats_json(h))
            .to_string_lossy()
            .into_owned();
        assert!(json.contains("\"arch\": \"pto_wsp_v9\""), "{json}");
        wsp_rt_destroy(h);
    }
    let toml = c_string(wsp_arch_builtin_source());
    let mut h = null_mut();
    let mut err = [0 as c_char; 256];
    // SAFETY: valid pointers.
    unsafe {
        assert_eq!(
            wsp_rt_create(
                c"mine".as_ptr(),
                toml.as_ptr(),
                &mut h,
                err.as_mut_ptr(),
                256
            ),
            WSP_RT_OK
        );
        wsp_rt_destroy(h);
        let bad = c"this is not toml [";
        assert_eq!(
            wsp_rt_create(c"bad".as_ptr(), bad.as_ptr(), &mut h, err.as_mut_ptr(), 256),
            WSP_RT_ERR_ARG
        );
        assert!(h.is_null());
        let msg = CStr::from_ptr(err.as_ptr()).to_string_lossy();
        assert!(msg.contains("bad"), "{msg}");
    }
}

/// A model's TOML text (the built-in `ascend910b` shipped with the repository).
fn wsp_arch_builtin_source() -> &'static str {
    include_str!("../../../std/arch/ascend910b.toml")
}
