//! Protocol numbers as newtypes with the RFC's names as associated constants (IKEv2's and
//! HIP's registries): an unknown value passes through losslessly and prints as `Name(n)`.

macro_rules! named_number {
    ($(#[$m:meta])* $name:ident($repr:ty) { $($(#[$cm:meta])* $c:ident = $v:expr,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $repr);

        impl $name {
            $($(#[$cm])* pub const $c: $name = $name($v);)*

            /// The RFC's name for this number, if it has one here.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $($name::$c => Some(stringify!($c)),)*
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(self, f)
            }
        }
    };
}
