// Entry point of the web UI inside the desktop window.
import { createApi } from "./api";
import { mountApp } from "./app";

const root = document.getElementById("app");
if (root) mountApp(root, createApi());
