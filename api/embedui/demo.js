document.getElementById("open").onclick = function () {
  FosConnect.open({publishableKey: document.body.getAttribute("data-key"), externalId: document.getElementById("ext").value}, function (ev) {
    document.getElementById("events").textContent += JSON.stringify(ev) + "\n";
  });
};
