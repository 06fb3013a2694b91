//! `StrMap`: a map from string ids to values, kept as a vector sorted by key.
//!
//! The core's maps hold call ids, message ids and tokens: a few entries, at most a few thousand (1024
//! remembered ids per session). A sorted vector with binary search is as quick as a hash map at that size,
//! and far smaller in WebAssembly than `std`'s `HashMap` with hashbrown and SipHash (BENCHMARKS.md,
//! "Changelog of figures", sorted-vector maps). Iteration is in key order.

#[derive(Debug)]
pub struct StrMap<V> {
    /// Sorted. Kept apart from the values so that the search is one function for every value type.
    keys: Vec<String>,
    values: Vec<V>,
}

impl<V> Default for StrMap<V> {
    fn default() -> Self {
        StrMap::new()
    }
}

/// FNV-1a over `s`'s bytes: a cheap hash for ids, which differ all along (the finished-ids index, the JS
/// string cache of the web layer).
pub fn str_hash(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn find(keys: &[String], key: &str) -> Result<usize, usize> {
    keys.binary_search_by(|k| k.as_str().cmp(key))
}

impl<V> StrMap<V> {
    pub const fn new() -> Self {
        StrMap {
            keys: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Inserts or replaces; returns the value that was there.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        match find(&self.keys, &key) {
            Ok(i) => self
                .values
                .get_mut(i)
                .map(|slot| std::mem::replace(slot, value)),
            Err(i) => {
                self.keys.insert(i, key);
                self.values.insert(i, value);
                None
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        find(&self.keys, key).ok().and_then(|i| self.values.get(i))
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        match find(&self.keys, key) {
            Ok(i) => self.values.get_mut(i),
            Err(_) => None,
        }
    }

    pub fn contains_key(&self, key: &str) -> bool {
        find(&self.keys, key).is_ok()
    }

    pub fn remove(&mut self, key: &str) -> Option<V> {
        let i = find(&self.keys, key).ok()?;
        self.keys.remove(i);
        Some(self.values.remove(i))
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
    }

    /// Takes every entry out, in key order.
    pub fn drain(&mut self) -> impl Iterator<Item = (String, V)> + '_ {
        self.keys.drain(..).zip(self.values.drain(..))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.keys.iter().zip(self.values.iter())
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut V)> {
        self.keys.iter().zip(self.values.iter_mut())
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.values.iter()
    }

    /// Removes every entry whose value satisfies `f`; returns their keys, in key order.
    pub fn remove_where(&mut self, f: impl Fn(&V) -> bool) -> Vec<String> {
        self.take_where(f).into_iter().map(|(k, _)| k).collect()
    }

    /// Removes every entry whose value satisfies `f`; returns them, in key order.
    pub fn take_where(&mut self, f: impl Fn(&V) -> bool) -> Vec<(String, V)> {
        let mut removed = Vec::new();
        let mut i = 0;
        while i < self.keys.len() {
            if f(&self.values[i]) {
                let v = self.values.remove(i);
                removed.push((self.keys.remove(i), v));
            } else {
                i += 1;
            }
        }
        removed
    }
}

impl<'a, V> IntoIterator for &'a StrMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::iter::Zip<std::slice::Iter<'a, String>, std::slice::Iter<'a, V>>;

    fn into_iter(self) -> Self::IntoIter {
        self.keys.iter().zip(self.values.iter())
    }
}

/// A set of string ids (a [`StrMap`] without values).
#[derive(Debug, Default)]
pub struct StrSet(StrMap<()>);

impl StrSet {
    pub const fn new() -> Self {
        StrSet(StrMap::new())
    }

    /// Adds `key`; false if it was there already.
    pub fn insert(&mut self, key: String) -> bool {
        self.0.insert(key, ()).is_none()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Removes `key`; false if it was not there.
    pub fn remove(&mut self, key: &str) -> bool {
        self.0.remove(key).is_some()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::StrMap;

    #[test]
    fn behaves_like_a_map() {
        let mut m = StrMap::new();
        assert_eq!(m.insert("b".into(), 2), None);
        assert_eq!(m.insert("a".into(), 1), None);
        assert_eq!(m.insert("c".into(), 3), None);
        assert_eq!(m.insert("b".into(), 20), Some(2));
        assert_eq!(m.len(), 3);
        assert_eq!(m.get("b"), Some(&20));
        assert!(m.contains_key("a") && !m.contains_key("z"));
        if let Some(v) = m.get_mut("c") {
            *v = 30;
        }
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"], "in key order");
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [1, 20, 30]);
        assert_eq!(m.remove("a"), Some(1));
        assert_eq!(m.remove("a"), None);
        m.insert("d".into(), 40);
        assert_eq!(m.remove_where(|v| *v >= 30), ["c", "d"]);
        m.insert("c".into(), 30);
        let drained: Vec<_> = m.drain().collect();
        assert_eq!(drained, [("b".to_owned(), 20), ("c".to_owned(), 30)]);
        assert!(m.is_empty());
    }
}
