// The chain view of one Ingress.
export class IngressPage {
  constructor(page) {
    this.page = page;
    this.annotation = page.getByTestId('annotation-status').first();
    this.evidence = page.getByTestId('finding-evidence');
    this.remediation = page.getByTestId('finding-remediation');
    this.previewFix = page.getByTestId('preview-edit-in-place');
  }

  async open(cluster, namespace, name) {
    await this.page.goto(`/ingresses/${cluster}/${namespace}/${name}`);
  }

  /// Opens the folded findings (a click on their heading: works without JavaScript too).
  async showFindings() {
    const fold = this.page.getByTestId('findings-fold');
    if ((await fold.getAttribute('open')) === null) await fold.locator('summary').click();
  }

  finding(rule) {
    return this.page.locator(`[data-testid="finding-row"][data-rule="${rule}"]`);
  }
}
