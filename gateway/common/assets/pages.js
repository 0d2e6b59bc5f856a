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
