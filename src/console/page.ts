/**
 * The console's page frame and its stylesheet (served from /console.css: the Content-Security-Policy
 * allows no inline style and no script).
 */
import { html, type SafeHtml } from './html';

/** Path of the stylesheet. */
export const STYLESHEET_PATH = '/console.css';

/** A whole HTML document: `title` (text) in the head and the header, `body` below it. */
export function renderPage(title: string, subtitle: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · ttc console</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<header><h1>${title}</h1><p>${subtitle}</p><nav><a href="/">Runs waiting for a person</a></nav></header>
<main>
${body}
</main>
</body>
</html>
`.text;
}

/** The stylesheet. */
export const STYLESHEET = `
:root { color-scheme: light; --ink: #1d232b; --muted: #5b6470; --line: #d5dae0; --accent: #1f5fbf; --warn: #9a3b00; --bad: #a01818; --ok: #176b2c; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f5f6f8; }
header { padding: 14px 24px; background: #fff; border-bottom: 1px solid var(--line); }
header h1 { margin: 0; font-size: 20px; }
header p { margin: 2px 0 0; color: var(--muted); }
header nav { margin-top: 6px; font-size: 13px; }
main { padding: 16px 24px 40px; max-width: 1100px; }
a { color: var(--accent); }
code, pre { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { margin: 4px 0 10px; padding: 8px 10px; background: #f0f2f5; border: 1px solid var(--line); border-radius: 4px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 320px; overflow: auto; }
.run { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 0 0 16px; }
.run h2 { margin: 0 0 4px; font-size: 16px; }
.run > p { margin: 0 0 8px; color: var(--muted); font-size: 13px; }
.call { border-top: 1px solid var(--line); padding-top: 10px; margin-top: 10px; }
.call h3 { margin: 0 0 6px; font-size: 15px; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; background: var(--accent); vertical-align: 1px; }
.status.paused { background: var(--warn); }
.status.unanswered { background: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0 0 8px; font-size: 14px; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
h4 { margin: 8px 0 0; font-size: 13px; color: var(--muted); font-weight: 600; }
.note { color: var(--muted); font-size: 13px; }
.warning { color: var(--warn); font-weight: 600; font-size: 13px; margin: 4px 0; }
.decisions { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; margin-top: 8px; }
.decisions form { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.decisions form.resolve { flex-direction: column; align-items: stretch; width: 100%; }
.decisions form.resolve .buttons { display: flex; gap: 6px; }
label { font-size: 13px; color: var(--muted); }
form.login { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
input[type=text], input[type=password], textarea { font: inherit; padding: 4px 6px; border: 1px solid var(--line); border-radius: 4px; min-width: 260px; }
textarea { font: 13px/1.4 ui-monospace, Menlo, Consolas, monospace; min-height: 60px; }
button { font: inherit; padding: 5px 14px; border-radius: 4px; border: 1px solid var(--line); background: #fff; cursor: pointer; }
button.approve, button.applied { background: var(--ok); border-color: var(--ok); color: #fff; }
button.reject, button.abandon { background: #fff; border-color: var(--bad); color: var(--bad); }
.outcome { background: #fff; border: 1px solid var(--line); border-left: 5px solid var(--ok); border-radius: 6px; padding: 12px 16px; }
.outcome.refused { border-left-color: var(--bad); }
.outcome .code { font-weight: 700; }
`;
