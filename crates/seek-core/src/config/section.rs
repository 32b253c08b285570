//! The `section!` macro: a section's keys declared once, from which come the file's serde struct
//! for the section, a `Key` constant per key and, where the section names one, the typed struct
//! its values land in, with its reading and its default.
//!
//! Owns the shape of a table entry and what is generated from it. It must not know any
//! particular key (the settings table, `settings.rs`, invokes it) nor how one value is read
//! (`setting.rs`, `Resolver::given`/`setting`).

/// Declares a section's keys once: generates the file's serde struct for the section (fields in
/// the order given, so serde's "expected one of" lists them as before), a `Key` constant per
/// key, named by its dotted file name, and, when the section names one (`=> … struct …`), the
/// typed struct its values land in: one field per key, of the same name, and its `read`, which
/// reads the keys in the order given (the first refused value is the error reported).
///
/// A key's field is `Sourced<T>` read by `Resolver::setting` (flag > variables > file >
/// default); a key whose reading is its own says so after its entry: `=> FieldType = expr;`,
/// where `expr` may use the resolver (named in `read |r|`) and the fields read before it
/// (`=> as name: FieldType = expr;` names the field otherwise than the key). Fields that are
/// not keys of the run follow in `then { name: Type = expr }`, or come before its keys in
/// `first { … }` (read first, in that order). The struct's `Default` is the section read
/// with nothing set.
///
/// ```text
/// section! {
///     /// `[web]` as read from the file.
///     pub struct WebFile in "web." at |c: FileConfig| &c.web;
///     /// The effective `[web]` settings.
///     => #[derive(Debug, Clone)] pub struct WebSettings read |r|;
///     /// The web agent's step cap.
///     MAX_STEPS max_steps: u64 { bounds: Bounds::Whole(1, 200), … }
///     /// Chromium's binary.
///     CHROMIUM chromium: String { … } => Sourced<Option<PathBuf>> = web::binary(r.raw(&CHROMIUM))?;
///     …
///     extra { /* serde fields that are not keys: nested sections */ }
///     then { /* typed fields that are not keys */ }
/// }
/// ```
macro_rules! section {
    // A key's field type: `Sourced<T>`, or the one its entry names.
    (@land $T:ty) => { $crate::config::Sourced<$T> };
    (@land $T:ty, $Land:ty) => { $Land };
    // A key's reading: `Resolver::setting`, or the one its entry names.
    (@read $r:ident, $KEY:ident) => { $r.setting(&$KEY)? };
    (@read $r:ident, $KEY:ident, $read:expr) => { $read };
    // No typed struct.
    (@typed [] $($rest:tt)*) => {};
    (@typed
        [$(#[$smeta:meta])* $Typed:ident $r:ident]
        [$($(#[$fmeta:meta])* $fvis:vis $ffield:ident: $fty:ty = $finit:expr;)*]
        [$(
            [$(#[doc = $doc:literal])+]
            $KEY:ident [$name:ident $($_file_name:ident)?] $T:ty [$($Land:ty = $read:expr;)?]
        )*]
        [$($(#[$tmeta:meta])* $tvis:vis $tfield:ident: $tty:ty = $tinit:expr;)*]
    ) => {
        $(#[$smeta])*
        pub struct $Typed {
            $($(#[$fmeta])* $fvis $ffield: $fty,)*
            $(
                $(#[doc = $doc])+
                pub $name: $crate::config::section::section!(@land $T $(, $Land)?),
            )*
            $($(#[$tmeta])* $tvis $tfield: $tty,)*
        }

        impl $Typed {
            /// The section's values, read in the order its keys are declared.
            pub(super) fn read(
                $r: &$crate::config::Resolver<'_>,
            ) -> Result<Self, $crate::config::ConfigError> {
                $(let $ffield = $finit;)*
                $(let $name = $crate::config::section::section!(@read $r, $KEY $(, $read)?);)*
                $(let $tfield = $tinit;)*
                Ok(Self { $($ffield,)* $($name,)* $($tfield,)* })
            }
        }

        /// Every key's default: the section read with no flag, variable or file.
        impl Default for $Typed {
            fn default() -> Self {
                $crate::config::Resolver::defaults(Self::read)
            }
        }
    };
    // Runs of keys, each with its typed struct or none (the top level, whose keys land in
    // several structs).
    (
        $(#[$meta:meta])*
        pub struct $File:ident in $prefix:literal at |$c:ident: $Root:ty| $get:expr;
        $(
            keys $(=> $(#[$smeta:meta])* pub struct $Typed:ident read |$r:ident|;)?
            $(first { $($(#[$fmeta:meta])* $fvis:vis $ffield:ident: $fty:ty = $finit:expr),* $(,)? })?
            {
                $(
                    $(#[doc = $doc:literal])+
                    $KEY:ident $field:ident: $T:ty { $($prop:ident: $val:expr),* $(,)? }
                    $(=> $(as $tname:ident:)? $Land:ty = $read:expr;)?
                )*
            }
            $(then { $($(#[$tmeta:meta])* $tvis:vis $tfield:ident: $tty:ty = $tinit:expr),* $(,)? })?
        )+
        $(extra { $($(#[$xmeta:meta])* $xfield:ident: $xty:ty),* $(,)? })?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $File {
            $($(pub $field: $crate::config::setting::FileValue<
                <$T as $crate::config::setting::Value>::File>,)*)+
            $($($(#[$xmeta])* pub $xfield: $xty,)*)?
        }
        $($(
            $(#[doc = $doc])+
            pub const $KEY: $crate::config::setting::Key<$T, $Root> = $crate::config::setting::Key {
                name: concat!($prefix, stringify!($field)),
                doc: concat!($($doc),+),
                file: |$c: &$Root| ($get).$field.as_ref(),
                $($prop: $val,)*
                ..$crate::config::setting::Key::BLANK
            };
        )*)+
        $(
            $crate::config::section::section!(@typed
                [$($(#[$smeta])* $Typed $r)?]
                [$($($(#[$fmeta])* $fvis $ffield: $fty = $finit;)*)?]
                [$([$(#[doc = $doc])+] $KEY [$($($tname)?)? $field] $T [$($Land = $read;)?])*]
                [$($($(#[$tmeta])* $tvis $tfield: $tty = $tinit;)*)?]
            );
        )+
    };
    // One run: a section whose keys all land in its typed struct, or in none.
    (
        $(#[$meta:meta])*
        pub struct $File:ident in $prefix:literal at |$c:ident: $Root:ty| $get:expr;
        $(=> $(#[$smeta:meta])* pub struct $Typed:ident read |$r:ident|;)?
        $(
            $(#[doc = $doc:literal])+
            $KEY:ident $field:ident: $T:ty { $($prop:ident: $val:expr),* $(,)? }
            $(=> $(as $tname:ident:)? $Land:ty = $read:expr;)?
        )*
        $(extra { $($(#[$xmeta:meta])* $xfield:ident: $xty:ty),* $(,)? })?
        $(then { $($(#[$tmeta:meta])* $tvis:vis $tfield:ident: $tty:ty = $tinit:expr),* $(,)? })?
    ) => {
        $crate::config::section::section! {
            $(#[$meta])*
            pub struct $File in $prefix at |$c: $Root| $get;
            keys $(=> $(#[$smeta])* pub struct $Typed read |$r|;)? {
                $(
                    $(#[doc = $doc])+
                    $KEY $field: $T { $($prop: $val),* }
                    $(=> $(as $tname:)? $Land = $read;)?
                )*
            }
            $(then { $($(#[$tmeta])* $tvis $tfield: $tty = $tinit),* })?
            $(extra { $($(#[$xmeta])* $xfield: $xty),* })?
        }
    };
}
pub(crate) use section;
