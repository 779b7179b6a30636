// Drives baseagent through the real Codex TypeScript SDK (tests/cli/test_codex_sdk.py).
// argv: <wrapper> <workdir> <extraDir> <baseUrl> <imagePath> <schemaJson>
// Turn 1 starts a thread; turn 2 resumes it by id (as a new process would) with an image
// and an output schema. Prints one JSON object with both turns' results.
import { Codex } from "@openai/codex-sdk";

const [wrapper, workdir, extraDir, baseUrl, imagePath, schemaJson] = process.argv.slice(2);
const codex = new Codex({ codexPathOverride: wrapper, baseUrl, apiKey: "sk-from-the-sdk" });
const options = {
  model: "openai/scripted",
  workingDirectory: workdir,
  additionalDirectories: [extraDir],
  sandboxMode: "danger-full-access",
  skipGitRepoCheck: true,
};

const thread = codex.startThread(options);
const first = await thread.run("first task");
const firstId = thread.id;

const resumed = codex.resumeThread(firstId, options);
const second = await resumed.run(
  [
    { type: "text", text: "second task" },
    { type: "local_image", path: imagePath },
  ],
  { outputSchema: JSON.parse(schemaJson) },
);

process.stdout.write(JSON.stringify({ firstId, secondId: resumed.id, first, second }) + "\n");
