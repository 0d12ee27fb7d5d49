//! The plane rebuilds the `tool_search` index where the catalog changes, never when a tool set is
//! read; the MCP connect wait comes from the value a host read, not from the environment.

use std::collections::BTreeSet;
use std::time::Duration;

use super::*;
use crate::discovery::search::SearchDoc;
use crate::discovery::service::DeferredIndex;

fn planted_index() -> DeferredIndex {
    DeferredIndex::build(vec![(
        SearchDoc {
            name: "mcp__gone__create_issue".into(),
            description: "Create an issue".into(),
            params: vec!["title".into()],
        },
        "gone".into(),
    )])
}

fn offline_plane() -> (tempfile::TempDir, Arc<CapabilityPlane>) {
    let dir = tempfile::tempdir().unwrap();
    let (root, data) = (dir.path().join("proj"), dir.path().join("data"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let plane = CapabilityPlane::offline(&root, &data).unwrap();
    (dir, plane)
}

#[test]
fn reading_a_tool_set_leaves_the_index_alone() {
    let (_dir, plane) = offline_plane();
    plane.discovery.set_index(planted_index());
    let registry = plane.registry();
    let toolset = plane.toolset(
        &registry,
        &Settings::default(),
        &HostCaps::default(),
        &BTreeSet::new(),
    );
    assert!(!toolset.tools.is_empty());
    assert_eq!(
        plane.discovery.index().names(),
        BTreeSet::from(["mcp__gone__create_issue".to_string()])
    );
}

#[test]
fn a_catalog_change_rebuilds_the_index() {
    let (_dir, plane) = offline_plane();
    plane.discovery.set_index(planted_index());
    // No MCP server: nothing is deferrable, so the planted entry goes at the rebuild.
    plane.set_catalog_context(CatalogContext::default());
    assert!(plane.discovery.index().names().is_empty());
    plane.discovery.set_index(planted_index());
    plane.refresh();
    assert!(plane.discovery.index().names().is_empty());
}

#[test]
fn without_a_context_a_refresh_keeps_the_index() {
    let (_dir, plane) = offline_plane();
    plane.discovery.set_index(planted_index());
    plane.refresh();
    assert_eq!(plane.discovery.index().names().len(), 1);
}

#[test]
fn the_connect_wait_comes_from_the_value_given() {
    assert_eq!(connect_wait(None), DEFAULT_MCP_CONNECT_WAIT);
    assert_eq!(connect_wait(Some("250")), Duration::from_millis(250));
    assert_eq!(connect_wait(Some(" 40 ")), DEFAULT_MCP_CONNECT_WAIT);
    assert_eq!(connect_wait(Some("soon")), DEFAULT_MCP_CONNECT_WAIT);
    assert_eq!(connect_wait(Some("-1")), DEFAULT_MCP_CONNECT_WAIT);
}

#[test]
fn the_index_is_built_by_its_first_reader_not_by_a_catalog_change() {
    let (_dir, plane) = offline_plane();
    plane.set_catalog_context(CatalogContext::default());
    plane.refresh();
    assert_eq!(plane.discovery.index_builds(), 0, "built before any read");
    assert!(plane.discovery.index().names().is_empty());
    assert_eq!(plane.discovery.index_builds(), 1);
    // Read again, or a catalog change that changes nothing: no second build.
    plane.discovery.index();
    plane.refresh();
    plane.discovery.index();
    assert_eq!(plane.discovery.index_builds(), 1);
}
