//! History per project: two projects sharing one data directory (one SQLite store) each see only
//! their own calls, plus the calls recorded without a project; paging stays inside the project;
//! the filter choices and a call's visibility follow the same rule; a version-6 database gets its
//! existing calls attributed by the upgrade; a project's page walks the project index.

use std::collections::HashSet;

use aibuddy_store::migrations::upgrade_to;
use aibuddy_store::{CallStart, HistoryQuery, Store, open_connection, rusqlite::params};

const A: &str = "/work/projects/alpha";
const B: &str = "/work/projects/beta";

fn start(id: &str, run: &str, root: Option<&str>, tool: &str, at: i64) -> CallStart {
    CallStart {
        tool_call_id: id.into(),
        run_id: run.into(),
        project_root: root.map(str::to_string),
        tool: tool.into(),
        config: tool.into(),
        input: format!("{{\"command\":\"echo {id}\"}}"),
        started_at_ms: Some(at),
    }
}

/// 300 calls alternating between A (run `ra`, tool `read`) and B (run `rb`, tool `execute`), then
/// two calls whose run has no project.
async fn two_projects() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for i in 0..300_i64 {
        let (run, root, tool) = if i % 2 == 0 {
            ("ra", A, "read")
        } else {
            ("rb", B, "execute")
        };
        store
            .begin_call(start(&format!("c{i:03}"), run, Some(root), tool, 1_000 + i))
            .await
            .unwrap();
    }
    for (i, id) in ["loose1", "loose2"].into_iter().enumerate() {
        store
            .begin_call(start(id, "r-none", None, "grep", 500 + i as i64))
            .await
            .unwrap();
    }
    (dir, store)
}

async fn walk(store: &Store, mut q: HistoryQuery) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let page = store.history_page(q.clone()).await.unwrap();
        ids.extend(page.rows.into_iter().map(|r| r.tool_call_id));
        match page.next {
            Some(c) => q.after = Some(c),
            None => return ids,
        }
    }
}

fn scoped(root: Option<&str>) -> HistoryQuery {
    HistoryQuery {
        project_root: root.map(str::to_string),
        limit: Some(37),
        ..HistoryQuery::default()
    }
}

#[tokio::test]
async fn each_project_pages_through_its_own_calls_and_the_unattributed_ones() {
    let (_dir, store) = two_projects().await;
    let a = walk(&store, scoped(Some(A))).await;
    let want_a: Vec<String> = (0..300)
        .rev()
        .filter(|i| i % 2 == 0)
        .map(|i| format!("c{i:03}"))
        .chain(["loose2".to_string(), "loose1".to_string()])
        .collect();
    assert_eq!(
        a, want_a,
        "project A: its calls newest first, then the unattributed"
    );
    let b = walk(&store, scoped(Some(B))).await;
    assert_eq!(b.len(), 152);
    assert!(
        b.iter()
            .all(|id| id.starts_with("loose") || id[1..].parse::<i64>().unwrap() % 2 == 1)
    );
    let everything = walk(&store, scoped(None)).await;
    assert_eq!(everything.len(), 302);
    assert_eq!(everything.iter().collect::<HashSet<_>>().len(), 302);

    // A project with no recorded call sees only the unattributed ones.
    let other = walk(&store, scoped(Some("/work/projects/gamma"))).await;
    assert_eq!(other, vec!["loose2", "loose1"]);

    // Filters narrow inside the scope: B has no `read` call.
    let q = HistoryQuery {
        tools: vec!["read".into()],
        ..scoped(Some(B))
    };
    assert!(walk(&store, q).await.is_empty());
}

#[tokio::test]
async fn without_unattributed_calls_a_project_sees_exactly_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .begin_call(start("only-a", "ra", Some(A), "read", 1))
        .await
        .unwrap();
    store
        .begin_call(start("only-b", "rb", Some(B), "read", 2))
        .await
        .unwrap();
    assert_eq!(walk(&store, scoped(Some(A))).await, vec!["only-a"]);
    assert_eq!(walk(&store, scoped(Some(B))).await, vec!["only-b"]);
    assert!(walk(&store, scoped(Some("/nowhere"))).await.is_empty());
}

#[tokio::test]
async fn facets_and_call_visibility_follow_the_project() {
    let (_dir, store) = two_projects().await;
    let (tools, runs) = store.history_facets(Some(A.into()), 100).await.unwrap();
    assert_eq!(tools, vec!["grep", "read"]);
    assert_eq!(runs, vec!["ra", "r-none"]);
    let (tools, runs) = store.history_facets(Some(B.into()), 100).await.unwrap();
    assert_eq!(tools, vec!["execute", "grep"]);
    assert_eq!(runs, vec!["rb", "r-none"]);
    let (tools, runs) = store.history_facets(None, 100).await.unwrap();
    assert_eq!(tools, vec!["execute", "grep", "read"]);
    assert_eq!(runs.len(), 3);

    assert_eq!(store.call_visible_in("c000", A).await.unwrap(), Some(true));
    assert_eq!(store.call_visible_in("c000", B).await.unwrap(), Some(false));
    assert_eq!(store.call_visible_in("c001", B).await.unwrap(), Some(true));
    assert_eq!(
        store.call_visible_in("loose1", B).await.unwrap(),
        Some(true)
    );
    assert_eq!(store.call_visible_in("nope", A).await.unwrap(), None);
}

#[tokio::test]
async fn a_version_6_database_gets_its_calls_attributed_and_late_projects_follow() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut conn = open_connection(dir.path()).unwrap();
        upgrade_to(&mut conn, 6).unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO projects (project_id, root, created_at) VALUES (1, '{A}', 1), (2, '{B}', 1);
             INSERT INTO runs (run_id, project_id, started_at) VALUES ('ra', 1, 1), ('rb', 2, 1),
                                                                   ('rn', NULL, 1);
             INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, input)
             VALUES ('old-a', 'ra', 'read', 'fs', 'ok', 10, '{{}}'),
                    ('old-b', 'rb', 'read', 'fs', 'ok', 11, '{{}}'),
                    ('old-n', 'rn', 'read', 'fs', 'ok', 12, '{{}}');"
        ))
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(walk(&store, scoped(Some(A))).await, vec!["old-n", "old-a"]);
    assert_eq!(walk(&store, scoped(Some(B))).await, vec!["old-n", "old-b"]);

    // A run that learns its project later (the store sets it once, never changes it): its calls
    // follow it and leave every other project's history.
    let conn = open_connection(dir.path()).unwrap();
    conn.execute(
        "UPDATE runs SET project_id = 2 WHERE run_id = ?1",
        params!["rn"],
    )
    .unwrap();
    assert_eq!(walk(&store, scoped(Some(A))).await, vec!["old-a"]);
    assert_eq!(walk(&store, scoped(Some(B))).await, vec!["old-n", "old-b"]);
}

#[tokio::test]
async fn a_project_page_walks_the_project_index_without_sorting() {
    let (dir, store) = two_projects().await;
    drop(store);
    let conn = open_connection(dir.path()).unwrap();
    // The common case: no unattributed call. Remove them to see that plan.
    conn.execute("DELETE FROM tool_calls WHERE project_id IS NULL", [])
        .unwrap();
    let plan: Vec<String> = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT c.tool_call_id FROM tool_calls c \
             WHERE c.project_id = 1 AND (c.started_at, c.seq) < (2000, 99) \
             ORDER BY c.started_at DESC, c.seq DESC LIMIT 101",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let text = plan.join("\n");
    assert!(text.contains("tool_calls_project_started"), "{text}");
    assert!(!text.contains("TEMP B-TREE"), "{text}");
}
