//! Constants that depend on themselves (E0213's cycles), found once per file.

use std::collections::BTreeMap;

use wsp_syntax::ast::{Expr, ItemKind};

use crate::db::{items_of, Db, File, ItemTag, Symbol};

/// The file's constants that depend on themselves, each with the names through which it does
/// (following constants into the modules they are imported from). A query of its own, so that
/// an edit elsewhere in the file re-runs no constant's check.
///
/// Linear in the constants reached: the graph of constants (by declaring file and name) is
/// built once, its strongly connected components found (Tarjan, iteratively: a chain of
/// thousands of constants is no deep recursion), and only a constant on a cycle gets its path,
/// by a search within its component.
#[salsa::tracked(returns(ref))]
pub(crate) fn const_cycles(db: &dyn Db, file: File) -> BTreeMap<String, Vec<String>> {
    use std::collections::HashMap;
    // Each file's constants by name (built once per file).
    let mut decls: HashMap<File, HashMap<&str, &Expr>> = HashMap::new();
    // The constant `n` as `f` sees it: its declaring file and value.
    let mut decl = |f: File, n: &str| -> Option<(File, &Expr)> {
        let (home, Symbol::Const) = crate::resolve::declaring_file(db, f, n)? else {
            return None;
        };
        let consts = decls.entry(home).or_insert_with(|| {
            items_of(db, home, &[ItemTag::Const])
                .filter_map(|(_, _, item)| match &item.kind {
                    ItemKind::Const(c) => Some((c.name.name.as_str(), &c.value)),
                    _ => None,
                })
                .collect()
        });
        consts.get(n).map(|e| (home, *e))
    };
    // The graph reachable from the file's own constants.
    let own: Vec<String> = items_of(db, file, &[ItemTag::Const])
        .filter_map(|(_, _, item)| match &item.kind {
            ItemKind::Const(c) => Some(c.name.name.clone()),
            _ => None,
        })
        .collect();
    struct Graph<'e> {
        ids: HashMap<(File, String), usize>,
        nodes: Vec<(File, String, &'e Expr)>,
        edges: Vec<Vec<usize>>,
        pending: Vec<usize>,
    }
    impl<'e> Graph<'e> {
        fn node(&mut self, f: File, n: &str, e: &'e Expr) -> usize {
            if let Some(&i) = self.ids.get(&(f, n.to_string())) {
                return i;
            }
            let i = self.nodes.len();
            self.ids.insert((f, n.to_string()), i);
            self.nodes.push((f, n.to_string(), e));
            self.edges.push(Vec::new());
            self.pending.push(i);
            i
        }
    }
    let mut g = Graph {
        ids: HashMap::new(),
        nodes: Vec::new(),
        edges: Vec::new(),
        pending: Vec::new(),
    };
    let mut roots: Vec<(String, usize)> = Vec::new();
    for n in &own {
        if let Some((home, e)) = decl(file, n) {
            let id = g.node(home, n, e);
            roots.push((n.clone(), id));
        }
    }
    while let Some(i) = g.pending.pop() {
        let (f, e) = (g.nodes[i].0, g.nodes[i].2);
        let names = std::cell::RefCell::new(Vec::new());
        crate::types::names_any(e, &|n| {
            names.borrow_mut().push(n.to_string());
            false
        });
        for n in names.into_inner() {
            if let Some((h, v)) = decl(f, &n) {
                let j = g.node(h, &n, v);
                g.edges[i].push(j);
            }
        }
    }
    let (nodes, edges) = (g.nodes, g.edges);
    let comp = components(&edges);
    let mut size = vec![0usize; edges.len()];
    for c in &comp {
        size[*c] += 1;
    }
    let mut out = BTreeMap::new();
    for (name, start) in roots {
        let on_cycle = size[comp[start]] > 1 || edges[start].contains(&start);
        if !on_cycle {
            continue;
        }
        // Breadth first from the start's successors back to it, within its component.
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::new();
        for &j in &edges[start] {
            if comp[j] == comp[start] && !parent.contains_key(&j) {
                parent.insert(j, usize::MAX);
                queue.push_back(j);
            }
        }
        let mut found = None;
        while let Some(i) = queue.pop_front() {
            if i == start {
                found = Some(i);
                break;
            }
            for &j in &edges[i] {
                if comp[j] == comp[start] && !parent.contains_key(&j) {
                    parent.insert(j, i);
                    queue.push_back(j);
                }
            }
        }
        if let Some(mut i) = found {
            let mut path = vec![nodes[i].1.clone()];
            while let Some(&p) = parent.get(&i).filter(|p| **p != usize::MAX) {
                path.push(nodes[p].1.clone());
                i = p;
            }
            path.reverse();
            out.insert(name, path);
        }
    }
    out
}

/// The strongly connected component of every node (Tarjan's algorithm, without recursion).
fn components(edges: &[Vec<usize>]) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let n = edges.len();
    let (mut index, mut low, mut comp) = (vec![NONE; n], vec![0; n], vec![NONE; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut next, mut ncomp) = (Vec::new(), 0, 0);
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        // (node, next edge to look at)
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut k)) = work.last_mut() {
            if *k == 0 && index[v] == NONE {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(*k) {
                *k += 1;
                if index[w] == NONE {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = ncomp;
                    if w == v {
                        break;
                    }
                }
                ncomp += 1;
            }
        }
    }
    comp
}
