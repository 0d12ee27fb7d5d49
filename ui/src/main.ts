// Entry point of the web UI inside the desktop window.
import { createApi } from "./api";
import { mountApp } from "./app";
import { createRunApi } from "./run/api";
import { RunController } from "./run/controller.svelte";
import { createProjectApi } from "./project/api";
import { ProviderChoiceStore, withProviderChoice } from "./project/choice.svelte";
import "./styles.css";
import "./run.css";
import "./project/project.css";

const root = document.getElementById("app");
const choice = new ProviderChoiceStore();
if (root) mountApp(root, createApi(), new RunController(withProviderChoice(createRunApi(), choice)), createProjectApi(), choice);
