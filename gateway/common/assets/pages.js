// The few things a page needs a script for (no inline script: the pages' Content-Security-Policy forbids it).
// A button with data-copy="<id>" copies that field's value to the clipboard and says so on itself.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  if (!field) return;
  try {
    await navigator.clipboard.writeText(field.value);
    button.textContent = "Copied";
  } catch {
    field.select();
    button.textContent = "Select and copy it";
  }
});

// Keyboard shortcuts, where a page offers them (never while typing in a field): "/" goes to the field marked
// data-shortcut="/"; in a list marked data-rows, "j" and "k" move to the next and the previous row's link (Enter
// opens it, as it opens any link).
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const typing = event.target.closest("input, textarea, select, [contenteditable]");
  if (typing) return;
  if (event.key === "/") {
    const field = document.querySelector('[data-shortcut="/"]');
    if (field) {
      event.preventDefault();
      field.focus();
    }
    return;
  }
  if (event.key !== "j" && event.key !== "k") return;
  const links = [...document.querySelectorAll("[data-rows] tbody tr a")];
  if (!links.length) return;
  const at = links.indexOf(document.activeElement);
  const next = at < 0 ? 0 : Math.min(Math.max(at + (event.key === "j" ? 1 : -1), 0), links.length - 1);
  document.querySelectorAll("[data-rows] tr.current").forEach((row) => row.classList.remove("current"));
  links[next].closest("tr").classList.add("current");
  links[next].focus();
});

// Live updates: a page element marked data-live="<url>" listens to that URL's server-sent events; on "changed" the
// page is fetched again and the parts marked data-live-part (by id) are replaced, so what is being typed stays, and
// the element with id live-status says so (its data-said). Set up again after htmx swaps in another page. A fetch
// answered after a later one began, or after htmx swapped in a page (the agent's own reply, say), is dropped: its
// copy is older than what the page shows.
let liveSource = null;
let liveFetches = 0;
function listenLive() {
  if (liveSource) liveSource.close();
  liveSource = null;
  const live = document.querySelector("[data-live]");
  if (!live || !("EventSource" in window)) return;
  const source = new EventSource(live.dataset.live);
  liveSource = source;
  liveSource.addEventListener("changed", async () => {
    const fetched = ++liveFetches;
    const response = await fetch(location.href, { headers: { Accept: "text/html" } });
    if (!response.ok) return;
    const text = await response.text();
    if (fetched !== liveFetches) return;
    const fresh = new DOMParser().parseFromString(text, "text/html");
    for (const part of document.querySelectorAll("[data-live-part]")) {
      const replacement = fresh.getElementById(part.id);
      if (replacement) part.replaceWith(document.importNode(replacement, true));
    }
    const said = document.getElementById("live-status");
    if (said) said.textContent = said.dataset.said || "Updated.";
    if (!document.contains(live)) listenLive(); // the part that listened was replaced
  });
}
listenLive();
document.addEventListener("htmx:beforeSwap", () => liveFetches++);
document.addEventListener("htmx:afterSettle", listenLive);
