// Entry point of the web UI inside the desktop window.
import { createApi } from "./api";
import { mountApp } from "./app";
import { createRunApi } from "./run/api";
import { RunController } from "./run/controller.svelte";
import "./styles.css";
import "./run.css";

const root = document.getElementById("app");
if (root) mountApp(root, createApi(), new RunController(createRunApi()));
