-- torch.utils: torch.utils.data (datasets and the DataLoader).
return {
  data = require("torch.utils.data"),
}
