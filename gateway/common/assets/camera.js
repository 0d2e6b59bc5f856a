// The self-inspection page's camera (no inline script: the pages' Content-Security-Policy forbids it). The device's
// camera shows in a <video>; "Take photo" draws the frame to a canvas, and the shot becomes the form's file, so that
// checking and sending post it as they post a chosen file. Without a camera, or when the person says no, the page
// keeps its file input alone.
(async () => {
  const box = document.querySelector("[data-camera]");
  if (!box || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) return;
  const video = box.querySelector("[data-camera-video]");
  const shot = document.querySelector("[data-camera-shot]");
  const input = document.getElementById("image");
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "user" }, audio: false });
  } catch {
    return;
  }
  video.srcObject = stream;
  box.hidden = false;
  box.querySelector("[data-camera-take]").addEventListener("click", () => {
    if (!video.videoWidth) return;
    const canvas = document.createElement("canvas");
    canvas.width = video.videoWidth;
    canvas.height = video.videoHeight;
    canvas.getContext("2d").drawImage(video, 0, 0);
    canvas.toBlob(
      (blob) => {
        const files = new DataTransfer();
        files.items.add(new File([blob], "camera.jpg", { type: "image/jpeg" }));
        input.files = files.files;
        shot.src = canvas.toDataURL("image/jpeg", 0.92); // a data: URL: the policy allows no blob: images
        shot.hidden = false;
      },
      "image/jpeg",
      0.92,
    );
  });
})();
